package fpabi

import (
	"encoding/binary"
	"strconv"

	"github.com/idemkit/idem/fingerprint"
)

// Answers (ABI.md, "The fingerprint module"): a status byte, then
//
//	AnswerOK         idem_fp_spec: u32 handle; idem_fp_of: the 32-byte
//	                 digest; idem_fp_canonical: u32 length, the bytes
//	AnswerError      u8 kind, i64 offset, str kind name, str message (Error()),
//	                 str msg (the Error's Msg)
//	AnswerMalformed  str message

// AppendHandle appends an OK answer of idem_fp_spec.
func AppendHandle(dst []byte, h uint32) []byte {
	return binary.LittleEndian.AppendUint32(append(dst, AnswerOK), h)
}

// AppendDigest appends an OK answer of idem_fp_of.
func AppendDigest(dst []byte, fp *[32]byte) []byte {
	return append(append(dst, AnswerOK), fp[:]...)
}

// AppendCanonical appends the answer of idem_fp_canonical over in: its
// canonical form with the default limits, or its error.
func AppendCanonical(dst, in []byte) []byte {
	at := len(dst)
	dst = append(dst, AnswerOK, 0, 0, 0, 0)
	out, err := fingerprint.AppendCanonical(dst, in)
	if err != nil {
		return AppendError(dst[:at], err)
	}
	binary.LittleEndian.PutUint32(out[at+1:], uint32(len(out)-at-5))
	return out
}

// AppendError appends the answer of err: AnswerMalformed for a
// *MalformedError, else AnswerError with err's kind, offset and texts.
// Package fingerprint returns its *Error unwrapped, and the module passes it
// on as it is, so a type switch finds it (errors.As would link reflection
// into the module for nothing).
func AppendError(dst []byte, err error) []byte {
	kind, name, offset, msg := uint8(KindUnidentified), "", int64(-1), ""
	switch e := err.(type) {
	case *MalformedError:
		return appendStr(append(dst, AnswerMalformed), e.Message)
	case *fingerprint.Error:
		offset, msg = e.Offset, e.Msg
		for i, k := range Kinds {
			if e.Kind == k {
				kind, name = uint8(i), KindNames[i]
				break
			}
		}
	}
	dst = append(dst, AnswerError, kind)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(offset))
	dst = appendStr(dst, name)
	dst = appendStr(dst, err.Error())
	return appendStr(dst, msg)
}

// UnidentifiedError is an error answer of kind KindUnidentified: an error
// of the module that is not a *fingerprint.Error of a listed kind.
type UnidentifiedError struct{ Message string }

func (e *UnidentifiedError) Error() string { return e.Message }

// ReadAnswer decodes an answer's status. It returns the payload of an OK
// answer; an error answer as the *fingerprint.Error it was in the module
// (same Kind, Offset and Msg, so the same Error() text, which it checks); a
// malformed-request answer as a *MalformedError; and an answer it cannot
// decode as an error wrapping ErrMalformedAnswer.
func ReadAnswer(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, answerError("an empty answer")
	}
	rd := reader{b: b}
	switch rd.u8() {
	case AnswerOK:
		return b[1:], nil
	case AnswerMalformed:
		m := rd.str()
		if rd.bad || rd.off != len(b) {
			return nil, answerError("a malformed-request answer of the wrong length")
		}
		return nil, &MalformedError{Message: m}
	case AnswerError:
		kind, offset := rd.u8(), int64(rd.u64())
		name, message, msg := rd.str(), rd.str(), rd.str()
		if rd.bad || rd.off != len(b) {
			return nil, answerError("an error answer of the wrong length")
		}
		if kind == KindUnidentified && name == "" {
			return nil, &UnidentifiedError{Message: message}
		}
		if int(kind) >= len(Kinds) || KindNames[kind] != name {
			return nil, answerError("error kind " + strconv.Itoa(int(kind)) + " named " + strconv.Quote(name))
		}
		fe := &fingerprint.Error{Kind: Kinds[kind], Offset: offset, Msg: msg}
		if fe.Error() != message {
			return nil, answerError("the message " + strconv.Quote(message) + " is not the error's " + strconv.Quote(fe.Error()))
		}
		return nil, fe
	}
	return nil, answerError("an unknown status")
}

// ReadHandle decodes an answer of idem_fp_spec.
func ReadHandle(b []byte) (uint32, error) {
	p, err := ReadAnswer(b)
	if err != nil {
		return 0, err
	}
	if len(p) != 4 {
		return 0, answerError("a handle answer of the wrong length")
	}
	return binary.LittleEndian.Uint32(p), nil
}

// ReadDigest decodes an answer of idem_fp_of.
func ReadDigest(b []byte) (fp [32]byte, err error) {
	p, err := ReadAnswer(b)
	if err != nil {
		return fp, err
	}
	if len(p) != len(fp) {
		return fp, answerError("a digest answer of the wrong length")
	}
	copy(fp[:], p)
	return fp, nil
}

// ReadCanonical decodes an answer of idem_fp_canonical; the bytes alias b.
func ReadCanonical(b []byte) ([]byte, error) {
	p, err := ReadAnswer(b)
	if err != nil {
		return nil, err
	}
	if len(p) < 4 || uint64(binary.LittleEndian.Uint32(p)) != uint64(len(p)-4) {
		return nil, answerError("a canonical answer of the wrong length")
	}
	return p[4:], nil
}

// answerError is an error wrapping ErrMalformedAnswer that says what.
func answerError(what string) error { return &malformedAnswer{what} }

type malformedAnswer struct{ what string }

func (e *malformedAnswer) Error() string { return ErrMalformedAnswer.Error() + ": " + e.what }
func (e *malformedAnswer) Unwrap() error { return ErrMalformedAnswer }
