package core

import (
	"time"
)

// InFlightAnswer is how the edge answers a request whose key is being executed.
type InFlightAnswer uint8

const (
	InFlightConflict InFlightAnswer = iota // 409 Conflict + Retry-After (default)
	InFlightAccepted                       // 202 Accepted + Retry-After
)

func (a InFlightAnswer) String() string {
	switch a {
	case InFlightConflict:
		return "conflict"
	case InFlightAccepted:
		return "accepted"
	}
	return sprintf("in_flight_answer(%d)", uint8(a))
}

// ExpiryMode is what Sweep does to a completed or failed_retryable record past its TTL.
type ExpiryMode uint8

const (
	ExpirySoft ExpiryMode = iota // status becomes expired; kept for audit, never replayed (default)
	ExpiryHard                   // the record is deleted
)

func (m ExpiryMode) String() string {
	switch m {
	case ExpirySoft:
		return "soft"
	case ExpiryHard:
		return "hard"
	}
	return sprintf("expiry_mode(%d)", uint8(m))
}

// FailMode is what Fail does to a record whose attempt definitely did not execute.
type FailMode uint8

const (
	FailKeep  FailMode = iota // status becomes failed_retryable; a retry executes again (default)
	FailEvict                 // the record is deleted; a retry starts afresh
)

func (m FailMode) String() string {
	switch m {
	case FailKeep:
		return "keep"
	case FailEvict:
		return "evict"
	}
	return sprintf("fail_mode(%d)", uint8(m))
}

// TTLMax is the longest TTL any policy may set: records are a retry
// window, not an archive.
const TTLMax = 72 * time.Hour

// ResponseBytesMax is the most any policy may allow for ResponseBytesMax:
// what every driver can store in one record (PostgreSQL's fields end at
// 1 GB, Redis values at 512 MB), with room to spare; a response the store
// cannot hold must be refused before anything runs, not after.
const ResponseBytesMax = 64 << 20

// Policy holds every tunable of the lifecycle. Build it with PolicyDefault
// and change fields; Validate (which Step calls) refuses values out of range.
type Policy struct {
	LeaseDuration  time.Duration  // how long an attempt owns its key without a heartbeat
	TTL            time.Duration  // how long a completed or failed_retryable record is kept
	InFlightWait   time.Duration  // how long the executor waits for a running attempt before answering InFlight
	InFlightAnswer InFlightAnswer // 409 or 202 for InFlight
	RetryAfter     time.Duration  // the least Retry-After told to a client that must come back
	Expiry         ExpiryMode
	Fail           FailMode
	// ReconcileBackoffBase and ReconcileBackoffMax bound the wait between two
	// reconciler looks at an unknown record: base * 2^attempts, at most max.
	ReconcileBackoffBase time.Duration
	ReconcileBackoffMax  time.Duration
	// ReconcileAttemptsMax is how many "still unknown" answers the reconciler
	// may give before the record is left unknown for an operator.
	ReconcileAttemptsMax uint32
	// TombstoneRetention is how long a soft-expired record (a tombstone:
	// scope, fingerprint, token and times, its response dropped) is kept
	// before the sweeper prunes it. At most TTLMax.
	TombstoneRetention time.Duration
	KeyBytesMax        int // at most KeyBytesMax
	RequestBytesMax    int // bound on the request body the edge reads and fingerprints
	ResponseBytesMax   int // bound on a stored response (body and headers), at most ResponseBytesMax
}

// PolicyDefault returns the defaults of SPEC §5.
func PolicyDefault() Policy {
	return Policy{
		LeaseDuration:        5 * time.Minute,
		TTL:                  24 * time.Hour,
		InFlightWait:         200 * time.Millisecond,
		InFlightAnswer:       InFlightConflict,
		RetryAfter:           time.Second,
		Expiry:               ExpirySoft,
		Fail:                 FailKeep,
		ReconcileBackoffBase: time.Second,
		ReconcileBackoffMax:  5 * time.Minute,
		ReconcileAttemptsMax: 20,
		TombstoneRetention:   24 * time.Hour,
		KeyBytesMax:          KeyBytesMax,
		RequestBytesMax:      1 << 20,
		ResponseBytesMax:     1 << 20,
	}
}

// Validate reports the first value out of range.
func (p *Policy) Validate() error {
	switch {
	case p.LeaseDuration <= 0:
		return refuse(ErrInvalidPolicy, "lease duration %v must be positive", p.LeaseDuration)
	case p.TTL <= 0:
		return refuse(ErrInvalidPolicy, "TTL %v must be positive", p.TTL)
	case p.TTL > TTLMax:
		return refuse(ErrInvalidPolicy, "TTL %v is over the %v cap", p.TTL, TTLMax)
	case p.InFlightWait < 0:
		return refuse(ErrInvalidPolicy, "in-flight wait %v must not be negative", p.InFlightWait)
	case p.InFlightAnswer > InFlightAccepted:
		return refuse(ErrInvalidPolicy, "%v", p.InFlightAnswer)
	case p.RetryAfter <= 0:
		return refuse(ErrInvalidPolicy, "retry-after %v must be positive", p.RetryAfter)
	case p.Expiry > ExpiryHard:
		return refuse(ErrInvalidPolicy, "%v", p.Expiry)
	case p.Fail > FailEvict:
		return refuse(ErrInvalidPolicy, "%v", p.Fail)
	case p.ReconcileBackoffBase <= 0:
		return refuse(ErrInvalidPolicy, "reconcile backoff base %v must be positive", p.ReconcileBackoffBase)
	case p.ReconcileBackoffMax < p.ReconcileBackoffBase:
		return refuse(ErrInvalidPolicy, "reconcile backoff cap %v is below its base %v", p.ReconcileBackoffMax, p.ReconcileBackoffBase)
	case p.TombstoneRetention <= 0 || p.TombstoneRetention > TTLMax:
		return refuse(ErrInvalidPolicy, "tombstone retention %v, want more than 0 and at most %v", p.TombstoneRetention, TTLMax)
	case p.ReconcileAttemptsMax == 0:
		return refuse(ErrInvalidPolicy, "reconcile attempts max must be at least 1")
	case p.KeyBytesMax < KeyBytesMin || p.KeyBytesMax > KeyBytesMax:
		return refuse(ErrInvalidPolicy, "key bytes max %d, want %d..%d", p.KeyBytesMax, KeyBytesMin, KeyBytesMax)
	case p.RequestBytesMax <= 0:
		return refuse(ErrInvalidPolicy, "request bytes max %d must be positive", p.RequestBytesMax)
	case p.ResponseBytesMax <= 0:
		return refuse(ErrInvalidPolicy, "response bytes max %d must be positive", p.ResponseBytesMax)
	case p.ResponseBytesMax > ResponseBytesMax:
		return refuse(ErrInvalidPolicy, "response bytes max %d is over the limit of %d", p.ResponseBytesMax, ResponseBytesMax)
	}
	return nil
}

// reconcileBackoff is base * 2^attempts, capped, without overflow.
func (p *Policy) reconcileBackoff(attempts uint32) time.Duration {
	d := p.ReconcileBackoffBase
	for i := uint32(0); i < attempts; i++ {
		if d > p.ReconcileBackoffMax/2 {
			return p.ReconcileBackoffMax
		}
		d *= 2
	}
	return min(d, p.ReconcileBackoffMax)
}
