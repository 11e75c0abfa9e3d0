package flow

import (
	"time"
)

// Code is the stable, machine-readable name of an error: safe to put in an
// API error body, a log field or a metric label. Codes never change meaning.
type Code string

const (
	// CodeInvalidKey: the Idempotency-Key is empty, shorter than 16 or longer
	// than the policy's limit, or holds control or non-ASCII bytes. 400.
	CodeInvalidKey Code = "invalid_key"
	// CodeInvalidRequest: another part of the request cannot be used (an empty
	// principal or use case, a missing fingerprint). 400.
	CodeInvalidRequest Code = "invalid_request"
	// CodeKeyMisuse: the key is live with another request fingerprint: the
	// client reused a key for a different request. Never retried as is. 422.
	CodeKeyMisuse Code = "key_misuse"
	// CodeInProgress: another attempt holds the key and did not finish within
	// the in-flight wait. Retry after Error.RetryAfter. 409, or 202 by policy.
	CodeInProgress Code = "in_progress"
	// CodeOutcomeUnknown: an attempt may have executed and its outcome is not
	// known yet (a timeout, a crash, a lost connection). Nothing re-executes
	// until it is settled; retry after Error.RetryAfter. 409.
	CodeOutcomeUnknown Code = "outcome_unknown"
	// CodeNotExecuted: the action reported, through NotExecuted, that it did
	// nothing; the key is free for a retry. The action's error is wrapped. 500
	// unless the caller maps its own error.
	CodeNotExecuted Code = "not_executed"
	// CodeStoreUnavailable: the store failed, so nothing was executed (fail
	// closed). 503.
	CodeStoreUnavailable Code = "idempotency_store_unavailable"
	// CodeStoreRejected: the store rejected a write for good (the database
	// rejected the data or a constraint: store.ErrRejected), so that retrying
	// would be refused again. Not an outage, and never a reason to execute:
	// a rejected reserve ran nothing. A bug of the store or its schema. 500.
	CodeStoreRejected Code = "idempotency_store_rejected"
	// CodeResponseInvalid: the action executed but its response cannot be
	// stored (too large, or not valid HTTP). The record is left unknown for
	// the reconciler, and this is a bug of the caller to fix. 500.
	CodeResponseInvalid Code = "response_invalid"
)

// Error is every error the executor returns. Match it with errors.Is against
// the sentinels below (which compare codes), or errors.As for the details.
type Error struct {
	Code Code
	// RetryAfter is when the client should come back (in_progress, outcome_unknown).
	RetryAfter time.Duration
	// Status is the HTTP status the edge should answer with.
	Status int
	// Err is the cause: a store error, the action's error, a validation error.
	Err error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return "idem: " + string(e.Code)
	}
	return "idem: " + string(e.Code) + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches any *Error with the same code, so errors.Is(err, ErrKeyMisuse) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels, one per code, for errors.Is.
var (
	ErrInvalidKey       = &Error{Code: CodeInvalidKey, Status: statusBadRequest}
	ErrInvalidRequest   = &Error{Code: CodeInvalidRequest, Status: statusBadRequest}
	ErrKeyMisuse        = &Error{Code: CodeKeyMisuse, Status: statusUnprocessableEntity}
	ErrInProgress       = &Error{Code: CodeInProgress, Status: statusConflict}
	ErrOutcomeUnknown   = &Error{Code: CodeOutcomeUnknown, Status: statusConflict}
	ErrNotExecuted      = &Error{Code: CodeNotExecuted, Status: statusInternalServerError}
	ErrStoreUnavailable = &Error{Code: CodeStoreUnavailable, Status: statusServiceUnavailable}
	ErrStoreRejected    = &Error{Code: CodeStoreRejected, Status: statusInternalServerError}
	ErrResponseInvalid  = &Error{Code: CodeResponseInvalid, Status: statusInternalServerError}
)

// newError returns a copy of the sentinel with a cause and a retry hint.
func newError(sentinel *Error, cause error, retryAfter time.Duration) *Error {
	e := *sentinel
	e.Err = cause
	e.RetryAfter = retryAfter
	return &e
}

// NotExecutedError marks an action's error as proof that the action had no
// side effect, so the key may be executed again. Build it with NotExecuted.
type NotExecutedError struct {
	Err error
	// Code is stored as the record's last error code; "not_executed" if empty.
	Code ErrorCode
}

func (e *NotExecutedError) Error() string {
	if e.Err == nil {
		return "not executed"
	}
	return "not executed: " + e.Err.Error()
}

func (e *NotExecutedError) Unwrap() error { return e.Err }

// NotExecuted wraps err to say the action definitely did nothing: it failed
// before any request left the process (validation, a refused connection to
// the downstream, ...). Only then may the key run again. Any other error, a
// panic or a timeout is taken as "may have executed" and sent to the
// reconciler: when in doubt, do not wrap.
func NotExecuted(err error) error { return &NotExecutedError{Err: err} }

// KeyMisuseError is the cause of ErrKeyMisuse: the fingerprint the key's
// record holds, the request the key was first used for. An edge that
// builds fingerprints with parts it can tell apart (idemhttp's, with part
// tags) can then say which part of the request differs. The fingerprint
// is of the same caller's earlier request (the scope includes its
// principal), and a digest: it tells nothing of the request's content.
type KeyMisuseError struct {
	Stored Fingerprint
}

func (e *KeyMisuseError) Error() string {
	return "the key's record holds the fingerprint of another request"
}

// StoredFingerprint is the fingerprint the key's record holds.
func (e *KeyMisuseError) StoredFingerprint() Fingerprint { return e.Stored }

// PanicError is the cause of an outcome_unknown error when the action panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return "action panicked: " + panicText(e.Value) }

// The HTTP statuses of the sentinels, as numbers: this package stays free
// of net/http (a module built from it, as the wasm one, must stay small).
// TestStatusesAreNetHTTPs holds them to net/http's constants.
const (
	statusAccepted            = 202
	statusBadRequest          = 400
	statusConflict            = 409
	statusUnprocessableEntity = 422
	statusInternalServerError = 500
	statusServiceUnavailable  = 503
)
