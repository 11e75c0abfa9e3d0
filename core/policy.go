package core

import (
	"fmt"
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
	return fmt.Sprintf("in_flight_answer(%d)", uint8(a))
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
	return fmt.Sprintf("expiry_mode(%d)", uint8(m))
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
	return fmt.Sprintf("fail_mode(%d)", uint8(m))
}

// TTLCap is the longest TTL any policy may set: records are a retry
// window, not an archive.
const TTLCap = 72 * time.Hour

// Policy holds every tunable of the lifecycle. Build it with DefaultPolicy
// and change fields; Validate (which Step calls) refuses values out of range.
type Policy struct {
	LeaseDuration  time.Duration  // how long an attempt owns its key without a heartbeat
	TTL            time.Duration  // how long a completed or failed_retryable record is kept
	InFlightWait   time.Duration  // how long the executor waits for a running attempt before answering InFlight
	InFlightAnswer InFlightAnswer // 409 or 202 for InFlight
	RetryAfter     time.Duration  // the least Retry-After told to a client that must come back
	Expiry         ExpiryMode
	Fail           FailMode
	// ReconcileBackoffBase and ReconcileBackoffCap bound the wait between two
	// reconciler looks at an unknown record: base * 2^attempts, at most cap.
	ReconcileBackoffBase time.Duration
	ReconcileBackoffCap  time.Duration
	// ReconcileAttemptsMax is how many "still unknown" answers the reconciler
	// may give before the record is left unknown for an operator.
	ReconcileAttemptsMax uint32
	// TombstoneRetention is how long a soft-expired record (a tombstone:
	// scope, fingerprint, token and times, its response dropped) is kept
	// before the sweeper prunes it. At most TTLCap.
	TombstoneRetention time.Duration
	KeyBytesMax        int // at most KeyBytesLimit
	RequestBytesMax    int // bound on the request body the edge reads and fingerprints
	ResponseBytesMax   int // bound on a stored response (body and headers)
}

// DefaultPolicy returns the defaults of SPEC §5.
func DefaultPolicy() Policy {
	return Policy{
		LeaseDuration:        5 * time.Minute,
		TTL:                  24 * time.Hour,
		InFlightWait:         200 * time.Millisecond,
		InFlightAnswer:       InFlightConflict,
		RetryAfter:           time.Second,
		Expiry:               ExpirySoft,
		Fail:                 FailKeep,
		ReconcileBackoffBase: time.Second,
		ReconcileBackoffCap:  5 * time.Minute,
		ReconcileAttemptsMax: 20,
		TombstoneRetention:   24 * time.Hour,
		KeyBytesMax:          KeyBytesLimit,
		RequestBytesMax:      1 << 20,
		ResponseBytesMax:     1 << 20,
	}
}

// Validate reports the first value out of range.
func (p *Policy) Validate() error {
	switch {
	case p.LeaseDuration <= 0:
		return fmt.Errorf("%w: lease duration %v must be positive", ErrInvalidPolicy, p.LeaseDuration)
	case p.TTL <= 0:
		return fmt.Errorf("%w: TTL %v must be positive", ErrInvalidPolicy, p.TTL)
	case p.TTL > TTLCap:
		return fmt.Errorf("%w: TTL %v is over the %v cap", ErrInvalidPolicy, p.TTL, TTLCap)
	case p.InFlightWait < 0:
		return fmt.Errorf("%w: in-flight wait %v must not be negative", ErrInvalidPolicy, p.InFlightWait)
	case p.InFlightAnswer > InFlightAccepted:
		return fmt.Errorf("%w: %v", ErrInvalidPolicy, p.InFlightAnswer)
	case p.RetryAfter <= 0:
		return fmt.Errorf("%w: retry-after %v must be positive", ErrInvalidPolicy, p.RetryAfter)
	case p.Expiry > ExpiryHard:
		return fmt.Errorf("%w: %v", ErrInvalidPolicy, p.Expiry)
	case p.Fail > FailEvict:
		return fmt.Errorf("%w: %v", ErrInvalidPolicy, p.Fail)
	case p.ReconcileBackoffBase <= 0:
		return fmt.Errorf("%w: reconcile backoff base %v must be positive", ErrInvalidPolicy, p.ReconcileBackoffBase)
	case p.ReconcileBackoffCap < p.ReconcileBackoffBase:
		return fmt.Errorf("%w: reconcile backoff cap %v is below its base %v", ErrInvalidPolicy, p.ReconcileBackoffCap, p.ReconcileBackoffBase)
	case p.TombstoneRetention <= 0 || p.TombstoneRetention > TTLCap:
		return fmt.Errorf("%w: tombstone retention %v, want more than 0 and at most %v", ErrInvalidPolicy, p.TombstoneRetention, TTLCap)
	case p.ReconcileAttemptsMax == 0:
		return fmt.Errorf("%w: reconcile attempts max must be at least 1", ErrInvalidPolicy)
	case p.KeyBytesMax < KeyBytesMin || p.KeyBytesMax > KeyBytesLimit:
		return fmt.Errorf("%w: key bytes max %d, want %d..%d", ErrInvalidPolicy, p.KeyBytesMax, KeyBytesMin, KeyBytesLimit)
	case p.RequestBytesMax <= 0:
		return fmt.Errorf("%w: request bytes max %d must be positive", ErrInvalidPolicy, p.RequestBytesMax)
	case p.ResponseBytesMax <= 0:
		return fmt.Errorf("%w: response bytes max %d must be positive", ErrInvalidPolicy, p.ResponseBytesMax)
	}
	return nil
}

// reconcileBackoff is base * 2^attempts, capped, without overflow.
func (p *Policy) reconcileBackoff(attempts uint32) time.Duration {
	d := p.ReconcileBackoffBase
	for i := uint32(0); i < attempts; i++ {
		if d > p.ReconcileBackoffCap/2 {
			return p.ReconcileBackoffCap
		}
		d *= 2
	}
	return min(d, p.ReconcileBackoffCap)
}
