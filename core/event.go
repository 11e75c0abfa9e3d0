package core

import (
	"time"
)

// EventKind is the closed set of things that can happen to a record.
type EventKind uint8

const (
	EventInvalid     EventKind = iota // the zero value; Step refuses it
	EventReserve                      // a request arrives and asks to execute
	EventComplete                     // the owner stores the outcome
	EventFail                         // the owner proves nothing was executed
	EventMarkUnknown                  // the owner cannot tell whether it executed
	EventHeartbeat                    // the owner extends its lease
	EventResolve                      // the reconciler settles an unknown record
	EventSweep                        // time passed: leases and TTLs are enforced
	EventEvict                        // an operator removes a settled record by hand
	eventCount
)

var eventNames = [eventCount]string{"invalid", "reserve", "complete", "fail", "mark_unknown", "heartbeat", "resolve", "sweep", "evict"}

func (k EventKind) String() string {
	if k < eventCount {
		return eventNames[k]
	}
	return sprintf("event(%d)", uint8(k))
}

// Verdict is the reconciler's finding about an unknown attempt.
type Verdict uint8

const (
	VerdictInvalid      Verdict = iota // the zero value; Step refuses it
	VerdictExecuted                    // the side effect happened; Response is the outcome to store
	VerdictNotExecuted                 // the side effect definitely did not happen
	VerdictStillUnknown                // the downstream cannot tell yet
	verdictCount
)

var verdictNames = [verdictCount]string{"invalid", "executed", "not_executed", "still_unknown"}

func (o Verdict) String() string {
	if o < verdictCount {
		return verdictNames[o]
	}
	return sprintf("verdict(%d)", uint8(o))
}

// Event is one input to Step. Which fields count depends on Kind:
//
//	Reserve      Now, Fingerprint, Token (a fresh token from the store)
//	Complete     Now, Token (the owner's), Response
//	Fail         Now, Token, ErrorCode
//	MarkUnknown  Now, Token, ErrorCode
//	Heartbeat    Now, Token
//	Resolve      Now, Token (of the attempt the reconciler examined), Verdict, Response (if executed),
//	             ErrorCode (if still unknown: why; kept as the record's last error)
//	Sweep        Now
//	Evict        Now, Token (the record's, as the operator read it)
//
// Fields that do not count for the kind are ignored.
type Event struct {
	Kind        EventKind
	Now         time.Time
	Fingerprint Fingerprint
	Token       Token
	Response    Response
	ErrorCode   ErrorCode
	Verdict     Verdict
}

// carriesErrorCode reports whether ev's ErrorCode counts for its kind (it
// goes into the record): the others ignore it, and so does its check.
func (ev *Event) carriesErrorCode() bool {
	switch ev.Kind {
	case EventFail, EventMarkUnknown:
		return true
	case EventResolve:
		return ev.Verdict == VerdictStillUnknown
	}
	return false
}

// ErrorCodeBytesMax bounds an event's ErrorCode (ValidateErrorCode).
const ErrorCodeBytesMax = 64

// ValidateErrorCode checks an error code an event carries into
// Record.LastErrorCode: empty (the core's default for the event), or 1 to
// ErrorCodeBytesMax bytes of RFC 9110 token characters (letters, digits and
// !#$%&'*+-.^_`|~), the alphabet of the core's own codes. A code is a
// machine-readable reason, not a message: the narrow alphabet is what every
// store can keep byte for byte and every log can print as it is.
func ValidateErrorCode(code ErrorCode) error {
	if len(code) > ErrorCodeBytesMax {
		return refuse(ErrInvalidErrorCode, "%d bytes, want at most %d", len(code), ErrorCodeBytesMax)
	}
	for i := 0; i < len(code); i++ {
		if !isTokenByte(code[i]) {
			return refuse(ErrInvalidErrorCode, "byte 0x%02x at %d is not a token character", code[i], i)
		}
	}
	return nil
}

// ErrorCode says why a record is failed_retryable or unknown
// (Record.LastErrorCode): a machine-readable reason, from the core's own
// (below) or an event's (ValidateErrorCode says which it takes).
type ErrorCode string

// Error codes the core writes into Record.LastErrorCode.
const (
	ErrorCodeLeaseExpired ErrorCode = "lease_expired" // the owner's lease ran out before it reported an outcome
	ErrorCodeNotExecuted  ErrorCode = "not_executed"  // default for Fail without a code
	ErrorCodeUnknown      ErrorCode = "outcome_unknown"
	ErrorCodeReconciled   ErrorCode = "reconciled_not_executed" // the reconciler found no side effect
)
