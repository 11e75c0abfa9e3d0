package fingerprint

import (
	"errors"
	"strconv"
)

// Kinds of error. Every error returned by this package is an *Error whose
// Kind is one of these, so callers can test with errors.Is:
//
//	if errors.Is(err, fingerprint.ErrDuplicateName) { ... }
var (
	// ErrSyntax: the input is not JSON (an unexpected character, an
	// unterminated string, a bad escape, a raw control character in a
	// string, empty input).
	ErrSyntax = errors.New("invalid JSON")
	// ErrInvalidUTF8: the input is not valid UTF-8 (RFC 3629). This includes
	// surrogate code points U+D800..U+DFFF encoded directly in UTF-8
	// (CESU-8 style), which UTF-8 cannot carry.
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrSurrogate: a \u escape that is a lone, reversed or mispaired UTF-16
	// surrogate, which denotes no Unicode character (RFC 7493 section 2.1).
	ErrSurrogate = errors.New("invalid surrogate escape")
	// ErrDuplicateName: an object has two members whose names are equal after
	// unescaping (RFC 7493 section 2.3).
	ErrDuplicateName = errors.New("duplicate member name")
	// ErrNumber: a number outside JSON's grammar (01, +1, .5, 1., 0x10, NaN,
	// Infinity).
	ErrNumber = errors.New("invalid number")
	// ErrNumberOverflow: a number too large for an IEEE 754 double
	// (RFC 7493 section 2.2). It is never clamped to the largest double.
	ErrNumberOverflow = errors.New("number overflows a double")
	// ErrPrecision: with the default precision rule of Spec.Of, a number that
	// binary64 cannot carry exactly enough to tell it from a different number
	// (see the package documentation).
	ErrPrecision = errors.New("number loses precision")
	// ErrTooDeep: arrays and objects nested deeper than the limit.
	ErrTooDeep = errors.New("nesting too deep")
	// ErrTooLarge: input longer than the limit.
	ErrTooLarge = errors.New("input too large")
	// ErrTrailingData: something other than white space after the value.
	ErrTrailingData = errors.New("trailing data after JSON value")
	// ErrBOM: the input starts with a UTF-8 byte-order mark (RFC 8259
	// section 8.1 forbids emitting one; RFC 8785 input must not have one).
	ErrBOM = errors.New("byte-order mark")
	// ErrPointer: a JSON Pointer (RFC 6901) that is malformed or contradicts
	// another, reported by NewSpec; or, with RequireIncluded, an included
	// pointer that selects nothing in the body.
	ErrPointer = errors.New("JSON pointer")
)

// Error is the one error type of this package. Kind is one of the Err*
// values above; Offset is the byte offset in the input where the problem
// was found, or -1 when the error is not about a position in the input (a
// malformed JSON Pointer given to NewSpec, an absent required pointer).
type Error struct {
	Kind   error
	Offset int64
	Msg    string
}

func (e *Error) Error() string {
	s := "fingerprint: " + e.Kind.Error() + ": " + e.Msg
	if e.Offset >= 0 {
		s += " at byte offset " + strconv.FormatInt(e.Offset, 10)
	}
	return s
}

// Unwrap returns Kind, so that errors.Is(err, ErrDuplicateName) works.
func (e *Error) Unwrap() error { return e.Kind }

func newError(kind error, off int, msg string) *Error {
	return &Error{Kind: kind, Offset: int64(off), Msg: msg}
}

// quoteByte describes one input byte for an error message.
func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return "byte 0x" + hex2(c)
}
