package core

import (
	"bytes"
	"fmt"
	"time"
)

// Status is where a record stands in the lifecycle. StatusAbsent (the zero
// value) means there is no record.
type Status uint8

const (
	StatusAbsent          Status = iota // no record for the scope
	StatusInProgress                    // an attempt holds the lease and may be running
	StatusCompleted                     // the outcome is stored and is replayed
	StatusFailedRetryable               // the last attempt definitely did not execute
	StatusUnknown                       // an attempt may have executed; only the reconciler or its owner settles it
	StatusExpired                       // soft-expired after its TTL: kept for audit, never replayed
	statusCount
)

var statusNames = [statusCount]string{"absent", "in_progress", "completed", "failed_retryable", "unknown", "expired"}

func (s Status) String() string {
	if s < statusCount {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Valid reports whether s is one of the closed set.
func (s Status) Valid() bool { return s < statusCount }

// Token is a fencing token: it names one attempt at executing a scope. The
// store hands out a fresh token with every load (see the root package's Store
// contract); tokens only grow and never repeat for a scope, even after its
// record was deleted and the key reused. Zero means "no token".
type Token uint64

// Header is one response header kept for replay.
type Header struct {
	Name  string
	Value string
}

// Response is what the one execution answered, stored so that every replay
// is byte-identical to it. Headers are the ones the caller chose to keep, in
// the caller's order.
type Response struct {
	StatusCode    int
	Headers       []Header
	Body          []byte
	SchemaVersion uint32 // the caller's version of the body's format
}

// Equal reports whether two responses are the same byte for byte.
func (r Response) Equal(o Response) bool {
	if r.StatusCode != o.StatusCode || r.SchemaVersion != o.SchemaVersion ||
		len(r.Headers) != len(o.Headers) || !bytes.Equal(r.Body, o.Body) {
		return false
	}
	for i := range r.Headers {
		if r.Headers[i] != o.Headers[i] {
			return false
		}
	}
	return true
}

// Bytes is the size that counts against Policy.ResponseBytesMax: the body
// and every header name and value.
func (r Response) Bytes() int {
	n := len(r.Body)
	for _, h := range r.Headers {
		n += len(h.Name) + len(h.Value)
	}
	return n
}

// Clone returns a deep copy, so a store can keep a response that its caller
// goes on to modify.
func (r Response) Clone() Response {
	c := r
	if r.Headers != nil {
		c.Headers = append([]Header(nil), r.Headers...)
	}
	if r.Body != nil {
		c.Body = append([]byte{}, r.Body...)
	}
	return c
}

// validate checks what the core relies on: a status code, named headers, and
// the size limit. Header names and values are otherwise opaque here; their
// HTTP syntax is the edge's concern (the executor checks it), so that the
// core serves other transports as well.
func (r *Response) validate(bytesMax int) error {
	if r.StatusCode < 100 || r.StatusCode > 599 {
		return fmt.Errorf("%w: status code %d, want 100..599", ErrResponseInvalid, r.StatusCode)
	}
	for i := range r.Headers {
		if r.Headers[i].Name == "" {
			return fmt.Errorf("%w: header %d has an empty name", ErrResponseInvalid, i)
		}
	}
	if n := r.Bytes(); n > bytesMax {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrResponseTooLarge, n, bytesMax)
	}
	return nil
}

// Record is everything stored for one scope. The zero Record, with only its
// Scope set, stands for "no record": that is what a driver hands to Step when
// a load finds nothing.
type Record struct {
	Scope       Scope
	Status      Status
	Fingerprint Fingerprint
	// Token owns the current (or last) attempt.
	Token Token
	// Version is bumped by every write and starts at 1 on insert. Because a
	// pruned key can be inserted again, a version alone does not name a
	// record state: compare-and-set compares (Version, Token), and tokens
	// never repeat for a scope.
	Version  uint64
	Response Response // meaningful only when Status is StatusCompleted (or StatusExpired after it)
	// LastErrorCode says why the record is failed_retryable or unknown
	// ("lease_expired", or the caller's code).
	LastErrorCode string
	// LockedUntil is the end of the execution lease (in_progress). An unknown
	// record keeps it: an attempt that honours its lease as a deadline
	// downstream cannot act after it, so the reconciler may conclude "not
	// executed" only once it has passed.
	LockedUntil time.Time
	// ReconcileAfter is when the reconciler should look at an unknown record
	// next; zero means it is not scheduled (given up after ReconcileAttemptsMax).
	ReconcileAfter    time.Time
	ReconcileAttempts uint32
	CreatedAt         time.Time // start of this incarnation of the key
	CompletedAt       time.Time
	// ExpiresAt is when a completed or failed_retryable record may be pruned.
	// It never applies to in_progress or unknown records.
	ExpiresAt time.Time
}

// Exists reports whether r is a stored record (not absent).
func (r *Record) Exists() bool { return r.Status != StatusAbsent }

// live reports whether the record still binds its key at now: absent,
// soft-expired and past-TTL completed or failed records do not.
func (r *Record) live(now time.Time) bool {
	switch r.Status {
	case StatusInProgress, StatusUnknown:
		return true
	case StatusCompleted, StatusFailedRetryable:
		return now.Before(r.ExpiresAt)
	}
	return false
}

// validate rejects a record the core could never have produced.
func (r *Record) validate() error {
	if !r.Status.Valid() {
		return fmt.Errorf("%w: %v", ErrInvalidRecord, r.Status)
	}
	if r.Status == StatusAbsent {
		return nil
	}
	switch {
	case r.Version == 0:
		return fmt.Errorf("%w: %v record with version 0", ErrInvalidRecord, r.Status)
	case r.Token == 0:
		return fmt.Errorf("%w: %v record without a fencing token", ErrInvalidRecord, r.Status)
	case r.Fingerprint.IsZero():
		return fmt.Errorf("%w: %v record without a fingerprint", ErrInvalidRecord, r.Status)
	}
	return nil
}
