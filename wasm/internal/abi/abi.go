// Package abi is the byte layout shared by the wasm guest (wasm/guest) and
// the Go host (package wasmcore): how a (record, event, policy) request and a
// step's answer are encoded. wasm/ABI.md is its specification, and the
// JavaScript host (wasm/js/idem.mjs) is a second implementation of it; a
// change here that is not also made there, and in ABI.md, is a bug, so any
// change to the layout bumps Version.
//
// All integers are little-endian and fixed width: a request is decoded once
// per step on the hot path, and fixed widths decode with one bounds check
// per field and no loops.
package abi

import (
	"errors"

	"github.com/idemkit/idem/core"
)

// Version is the ABI version. The guest exports it as idem_abi_version; a
// host refuses a module whose version differs from its own.
const Version = 5

// Export names of the guest module.
const (
	ExportVersion = "idem_abi_version" // () -> i32: Version
	ExportInput   = "idem_input"       // (size i32) -> i32: address of a guest buffer of at least size bytes
	ExportStep    = "idem_step"        // (size i32) -> i64: steps the request in the input buffer; (address << 32) | length of the answer
	ExportMemory  = "memory"
)

// Answer status, the first byte of an answer.
const (
	AnswerOK      = 0 // a Transition and the record's changes follow
	AnswerRefused = 1 // Step returned an error: its sentinel index and message follow
)

// Sentinel indexes: the index of the core sentinel an error wraps. The
// order is part of the ABI (append only).
var Sentinels = []error{
	core.ErrInvalidScope, core.ErrInvalidKey, core.ErrFingerprintLength, core.ErrFingerprintMissing,
	core.ErrTimeMissing, core.ErrTokenMissing, core.ErrTokenNotFresh, core.ErrResponseInvalid,
	core.ErrResponseTooLarge, core.ErrUnknownEvent, core.ErrUnknownVerdict, core.ErrInvalidRecord,
	core.ErrInvalidPolicy, core.ErrInvalidErrorCode,
}

const (
	// SentinelMalformedRequest: the guest could not decode the request (a host bug).
	SentinelMalformedRequest = 254
	// SentinelUnidentified: Step returned an error that wraps none of Sentinels.
	SentinelUnidentified = 255
)

// ErrMalformedRequest is the sentinel of SentinelMalformedRequest.
var ErrMalformedRequest = errors.New("idem/wasm: the guest could not decode the request")

// ErrMalformedAnswer: the host could not decode the guest's answer.
var ErrMalformedAnswer = errors.New("idem/wasm: malformed answer from the guest")

// RefusedError is an error Step returned inside the guest, rebuilt on the
// host: its message is the guest's err.Error(), and it unwraps to the core
// sentinel it wrapped there, so errors.Is and core.Refused answer as they
// would for the native error.
type RefusedError struct {
	Sentinel error // nil for SentinelUnidentified
	Message  string
}

func (e *RefusedError) Error() string { return e.Message }
func (e *RefusedError) Unwrap() error { return e.Sentinel }

// SentinelOf is the sentinel index of err: the index of the first sentinel it wraps.
func SentinelOf(err error) uint8 {
	for i, s := range Sentinels {
		if errors.Is(err, s) {
			return uint8(i)
		}
	}
	if errors.Is(err, ErrMalformedRequest) {
		return SentinelMalformedRequest
	}
	return SentinelUnidentified
}

// ErrorOf rebuilds the error of a sentinel index and message.
func ErrorOf(sentinel uint8, message string) error {
	switch {
	case int(sentinel) < len(Sentinels):
		return &RefusedError{Sentinel: Sentinels[sentinel], Message: message}
	case sentinel == SentinelMalformedRequest:
		return &RefusedError{Sentinel: ErrMalformedRequest, Message: message}
	}
	return &RefusedError{Message: message}
}

// Change-mask bits of an OK answer: which record fields Step changed. Only
// those are sent back, each in this order; the host leaves the others as
// they were, which is exactly what the native Step does with them.
const (
	ChangedScope = 1 << iota
	ChangedStatus
	ChangedFingerprint
	ChangedToken
	ChangedVersion
	ChangedResponse
	ChangedLastErrorCode
	ChangedLockedUntil
	ChangedReconcileAfter
	ChangedReconcileAttempts
	ChangedCreatedAt
	ChangedCompletedAt
	ChangedExpiresAt
	changedAll = 1<<iota - 1
)

// Response tags of a changed response.
const (
	ResponseCleared   = 0 // core.Response{}
	ResponseFromEvent = 1 // the event's response, shared as the native Step shares it
	ResponseExplicit  = 2 // a response follows
)

// Time tags, in requests and answers.
const (
	TimeZero     = 0 // time.Time{}
	TimeInstant  = 1 // unix seconds (i64) and nanoseconds (u32) follow; UTC
	TimeFromNow  = 2 // answers only: as TimeInstant, in the location of the event's Now
	timeTagCount = 3
)

// nilLength is the length that encodes a nil slice, so that a nil slice and
// an empty one survive the round trip as what they were.
const nilLength = 0xFFFF_FFFF

// appendU64 and appendU32 write little-endian integers. They are written out
// rather than taken from encoding/binary, which would link its reflection
// cache into the guest for two one-line functions.
func appendU64(dst []byte, v uint64) []byte {
	return append(dst, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
}

func appendU32(dst []byte, v uint32) []byte {
	return append(dst, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}
