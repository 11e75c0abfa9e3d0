package core

import (
	"bytes"
	"math"
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
	StatusExpired                       // soft-expired after its TTL: a tombstone (no response), pruned after a retention
	statusCount
)

var statusNames = [statusCount]string{"absent", "in_progress", "completed", "failed_retryable", "unknown", "expired"}

func (s Status) String() string {
	if s < statusCount {
		return statusNames[s]
	}
	return sprintf("status(%d)", uint8(s))
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
// goes on to modify, and a caller can modify one a store keeps. Nil and
// empty slices stay as they were; header names and values are strings,
// which nobody can modify, and are shared.
func (r Response) Clone() Response {
	c := r
	if r.Headers != nil {
		c.Headers = append(make([]Header, 0, len(r.Headers)), r.Headers...)
	}
	if r.Body != nil {
		c.Body = append([]byte{}, r.Body...)
	}
	return c
}

// validate holds every rule a stored response must follow, so that each
// path that stores one (Complete, and Resolve as executed) enforces them for
// every caller and in every runtime the core is compiled to: a status HTTP
// can replay (200..599: a 1xx is not a final answer), no body with 204 or
// 304, header names that are RFC 9110 tokens and values free of control
// bytes (a replay must never split a response or inject a header), and the
// size limit.
func (r *Response) validate(bytesMax int) error {
	if err := CheckStatus(r.StatusCode, len(r.Body)); err != nil {
		return err
	}
	for i := range r.Headers {
		if err := validateHeader(i, &r.Headers[i]); err != nil {
			return err
		}
	}
	if n := r.Bytes(); n > bytesMax {
		return refuse(ErrResponseTooLarge, "%d bytes, limit %d", n, bytesMax)
	}
	return nil
}

// CheckStatus is the rule for the status of a response that can be stored
// and replayed over HTTP: 200..599 (a 1xx is not a final answer), and no
// body with 204 or 304. Every path that stores a response applies it (with
// the rest of the response rules); an edge that replays a record it did not
// write may check it again before sending.
func CheckStatus(statusCode, bodyBytes int) error {
	if statusCode < 200 || statusCode > 599 {
		return refuse(ErrResponseInvalid, "status code %d, want 200..599", statusCode)
	}
	if (statusCode == 204 || statusCode == 304) && bodyBytes > 0 {
		return refuse(ErrResponseInvalid, "status %d with a %d-byte body", statusCode, bodyBytes)
	}
	return nil
}

// validateHeader checks one header against RFC 9110 field syntax: the name a
// token, the value visible characters, spaces and tabs only.
func validateHeader(i int, h *Header) error {
	if h.Name == "" {
		return refuse(ErrResponseInvalid, "header %d has an empty name", i)
	}
	for j := 0; j < len(h.Name); j++ {
		if !isTokenByte(h.Name[j]) {
			return refuse(ErrResponseInvalid, "header %d: name byte 0x%02x at %d is not a token character", i, h.Name[j], j)
		}
	}
	for j := 0; j < len(h.Value); j++ {
		if c := h.Value[j]; (c < 0x20 && c != '\t') || c == 0x7f {
			return refuse(ErrResponseInvalid, "header %q: control byte 0x%02x at %d in the value", h.Name, c, j)
		}
	}
	return nil
}

// isTokenByte reports whether c may appear in an RFC 9110 token.
func isTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
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
	Response Response // meaningful only when Status is StatusCompleted
	// LastErrorCode says why the record is failed_retryable or unknown
	// ("lease_expired", or the caller's code).
	LastErrorCode ErrorCode
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
	// ExpiresAt is when a completed or failed_retryable record expires, and
	// when an expired one (a tombstone) is pruned. It never applies to
	// in_progress or unknown records.
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
		return refuse(ErrInvalidRecord, "%v", r.Status)
	}
	if r.Status == StatusAbsent {
		return nil
	}
	switch {
	case r.Version == 0:
		return refuse(ErrInvalidRecord, "%v record with version 0", r.Status)
	case r.Version == math.MaxUint64:
		// Its next write would wrap the version to 0: refused rather than
		// wrapped (no record is written 2^64 - 1 times but a broken one).
		return refuse(ErrInvalidRecord, "%v record at the last version, %d", r.Status, r.Version)
	case r.Token == 0:
		return refuse(ErrInvalidRecord, "%v record without a fencing token", r.Status)
	case r.Fingerprint.IsZero():
		return refuse(ErrInvalidRecord, "%v record without a fingerprint", r.Status)
	}
	return nil
}
