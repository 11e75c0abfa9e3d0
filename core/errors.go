package core

import "errors"

// Errors returned by the core for bad input. Each is a programming or input
// error of the caller, never a state of a record: the record is left as it
// was and no write is returned. Callers compare with errors.Is; the message
// wrapped around each names the offending value.
var (
	// ErrInvalidScope (from Scope.Validate): the principal or use case is
	// empty, too long, or holds control or non-UTF-8 bytes; or the tenant does.
	ErrInvalidScope = errors.New("idem/core: invalid scope")
	// ErrInvalidKey (from ValidateKey and Scope.Validate): the idempotency key is empty, shorter than KeyBytesMin,
	// longer than the policy's KeyBytesMax, or holds a byte outside printable
	// ASCII (control characters and non-ASCII are refused).
	ErrInvalidKey = errors.New("idem/core: invalid idempotency key")
	// ErrFingerprintLength: a fingerprint was built from the wrong number of bytes.
	ErrFingerprintLength = errors.New("idem/core: fingerprint has the wrong length")
	// ErrFingerprintMissing: Reserve was given the zero Fingerprint.
	ErrFingerprintMissing = errors.New("idem/core: fingerprint is missing")
	// ErrTimeMissing: an event's Now is the zero time.
	ErrTimeMissing = errors.New("idem/core: event time is missing")
	// ErrTokenMissing: an event that needs a fencing token has the zero token.
	ErrTokenMissing = errors.New("idem/core: fencing token is missing")
	// ErrTokenNotFresh: Reserve would grant an attempt with a token that is not
	// greater than the record's current token. Tokens come from the store and
	// must never repeat for a scope; a driver that hands out an old token is broken.
	ErrTokenNotFresh = errors.New("idem/core: fencing token is not fresh")
	// ErrResponseInvalid: a response HTTP cannot replay as stored: a status
	// outside 200..599, a body with 204 or 304, or a header whose name is not
	// an RFC 9110 token or whose value holds a control byte.
	ErrResponseInvalid = errors.New("idem/core: invalid response")
	// ErrResponseTooLarge: a response's body and headers exceed the policy's
	// ResponseBytesMax. Storing a truncated response would break replay fidelity.
	ErrResponseTooLarge = errors.New("idem/core: response too large")
	// ErrUnknownEvent: an EventKind outside the closed set.
	ErrUnknownEvent = errors.New("idem/core: unknown event kind")
	// ErrUnknownVerdict: a Resolve event with a Verdict outside the closed set.
	ErrUnknownVerdict = errors.New("idem/core: unknown reconcile verdict")
	// ErrInvalidRecord: the record handed to Step is not one the core could
	// have produced (unknown status, zero version on a present record, ...).
	// A driver that returns such a record has lost or corrupted data.
	ErrInvalidRecord = errors.New("idem/core: invalid record")
	// ErrInvalidPolicy: a policy value is out of range.
	ErrInvalidPolicy = errors.New("idem/core: invalid policy")
	// ErrInvalidErrorCode: an event's ErrorCode (Fail, MarkUnknown, Resolve
	// still unknown) is longer than ErrorCodeBytesMax or holds a byte that
	// is not an RFC 9110 token character. Every driver stores a code the
	// core accepts, byte for byte; a code of any bytes would not survive
	// some (PostgreSQL text refuses NUL and invalid UTF-8).
	ErrInvalidErrorCode = errors.New("idem/core: invalid error code")
)

// refusals are every error above: the list Refused reads, kept beside the
// definitions so that a new error joins it.
var refusals = []error{
	ErrInvalidScope, ErrInvalidKey, ErrFingerprintLength, ErrFingerprintMissing, ErrTimeMissing,
	ErrTokenMissing, ErrTokenNotFresh, ErrResponseInvalid, ErrResponseTooLarge, ErrUnknownEvent,
	ErrUnknownVerdict, ErrInvalidRecord, ErrInvalidPolicy, ErrInvalidErrorCode,
}

// Refused reports whether err is (or wraps) one of the core's errors: Step
// refused its input, and nothing changed.
func Refused(err error) bool {
	for _, e := range refusals {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
