package abi

import (
	"errors"
	"strings"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/flow"
)

// AppendEffect appends the answer to a flow call that moved the flow:
// AnswerOK, its handle, then what Next asks (ABI.md, "Flow").
func AppendEffect(dst []byte, handle uint32, f *flow.Flow) []byte {
	dst = put32(append(dst, AnswerOK), handle)
	eff := f.Next()
	dst = append(dst, byte(eff.Kind))
	switch eff.Kind {
	case flow.EffectApply:
		dst = appendEvent(dst, &eff.Event)
		// Held is the record the host reported for the attempt's reserve
		// (FlowApplied): the host keeps it, and only its use is sent.
		dst = append(dst, boolByte(eff.Held != nil), boolByte(eff.Detached))
		return put64(dst, uint64(eff.Timeout))
	case flow.EffectRun:
		dst = put64(dst, uint64(eff.Attempt.Token))
		return appendTime(dst, eff.Attempt.LockedUntil)
	case flow.EffectWait:
		dst = put64(dst, eff.Version)
		dst = put64(dst, uint64(eff.Token))
		return put64(dst, uint64(eff.Wait))
	}
	r, err := f.Result()
	dst = append(dst, boolByte(eff.Panic != nil))
	if err != nil {
		return appendError(append(dst, 1), err)
	}
	dst = append(dst, 0, byte(r.Kind))
	dst = appendResponse(dst, &r.Response)
	dst = put64(dst, uint64(r.Token))
	return append(dst, boolByte(r.Recorded))
}

// AppendFlowError appends FlowBegin's refusal of a request.
func AppendFlowError(dst []byte, err error) []byte {
	return appendError(append(dst, AnswerFlowError), err)
}

// A flow error's cause: none, an error's text, or a key's misuse (the
// stored fingerprint; its text is fixed).
const (
	causeNone      = 0
	causeText      = 1
	causeKeyMisuse = 2
)

// appendError writes a *flow.Error as its code, status, retry after and
// cause (its text and kind), any other error as its kind and text.
func appendError(dst []byte, err error) []byte {
	e, ok := err.(*flow.Error)
	if !ok {
		return appendText(dst, err)
	}
	dst = appendString(append(dst, ErrKindFlow), string(e.Code))
	dst = put64(dst, uint64(int64(e.Status)))
	dst = put64(dst, uint64(e.RetryAfter))
	if e.Err == nil {
		return append(dst, 0)
	}
	if m, ok := e.Err.(*flow.KeyMisuseError); ok {
		return append(append(dst, causeKeyMisuse), m.Stored[:]...)
	}
	return appendText(append(dst, causeText), e.Err)
}

// AppendLeaseState appends the answer to FlowLease (next 0) and FlowBeaten:
// when the next heartbeat is due, and the lease as the host keeps it.
func AppendLeaseState(dst []byte, next time.Duration, l *flow.Lease) []byte {
	dst = put64(append(dst, AnswerOK), uint64(next))
	dst = put64(dst, uint64(l.Event().Token))
	dst = put64(dst, uint64(l.Interval()))
	return appendTime(dst, l.TellBy())
}

// AppendLostAnswer appends the answer to FlowLost; AppendDuration to FlowBeatTimeout.
func AppendLostAnswer(dst []byte, cause error, lost bool) []byte {
	dst = append(dst, AnswerOK, boolByte(lost))
	if !lost {
		return dst
	}
	return put(dst, cause)
}

func AppendDuration(dst []byte, d time.Duration) []byte {
	return put64(append(dst, AnswerOK), uint64(d))
}

// FlowAnswer is an effect answer as the host decodes it.
type FlowAnswer struct {
	Handle uint32
	// Effect is what Next asks. The host fills what it holds itself:
	// Attempt.Scope (the request's), and Held, which UsesHeld says to set
	// to the record it reported for the attempt's reserve.
	Effect   flow.Effect
	UsesHeld bool
	// EffectAnswer: the flow's answer.
	Result   flow.Result
	Err      error
	Panicked bool
}

// DecodeFlowAnswer decodes an answer of AppendEffect or AppendFlowError
// (then Err is the refusal and the rest zero); every string and slice is
// the host's own copy.
func DecodeFlowAnswer(b []byte, a *FlowAnswer) error {
	r := reader{b: b}
	*a = FlowAnswer{}
	switch r.u8() {
	case AnswerRefused:
		return r.refused()
	case AnswerFlowError:
		a.Err = r.error()
		return r.end(b)
	case AnswerOK:
	default:
		return malformed(errors.New("unknown answer status"))
	}
	a.Handle = r.u32()
	eff := &a.Effect
	eff.Kind = flow.EffectKind(r.u8())
	switch eff.Kind {
	case flow.EffectApply:
		r.effectApply(a)
	case flow.EffectRun:
		eff.Attempt.Token = core.Token(r.u64())
		eff.Attempt.LockedUntil = r.time(time.UTC)
	case flow.EffectWait:
		eff.Version, eff.Token, eff.Wait = r.u64(), core.Token(r.u64()), time.Duration(r.u64())
	case flow.EffectAnswer:
		a.Panicked = r.u8() != 0
		if r.u8() != 0 {
			a.Err = r.error()
			break
		}
		a.Result.Kind = flow.ResultKind(r.u8())
		r.response(&a.Result.Response, new([1]byte), new([1]core.Header))
		a.Result.Token = core.Token(r.u64())
		a.Result.Recorded = r.u8() != 0
	default:
		return malformed(errors.New("unknown effect kind"))
	}
	if err := r.end(b); err != nil {
		return err
	}
	cloneResponse(&eff.Event.Response)
	cloneResponse(&a.Result.Response)
	return nil
}

func (r *reader) effectApply(a *FlowAnswer) {
	eff, ev := &a.Effect, &a.Effect.Event
	ev.Kind = core.EventKind(r.u8())
	ev.Now = r.time(time.UTC)
	copy(ev.Fingerprint[:], r.take(core.FingerprintBytes))
	ev.Token = core.Token(r.u64())
	r.response(&ev.Response, new([1]byte), new([1]core.Header))
	ev.ErrorCode = core.ErrorCode(strings.Clone(r.str()))
	ev.Verdict = core.Verdict(r.u8())
	a.UsesHeld = r.u8() != 0
	eff.Detached = r.u8() != 0
	eff.Timeout = time.Duration(r.u64())
}

// error reads what appendError wrote.
func (r *reader) error() error {
	if r.off >= len(r.b) || r.b[r.off] != ErrKindFlow {
		return r.textCopy()
	}
	r.off++
	e := &flow.Error{Code: flow.Code(strings.Clone(r.str()))}
	e.Status = int(int64(r.u64()))
	e.RetryAfter = time.Duration(r.u64())
	switch r.u8() {
	case causeNone:
	case causeText:
		e.Err = r.textCopy()
	case causeKeyMisuse:
		m := &flow.KeyMisuseError{}
		copy(m.Stored[:], r.take(len(m.Stored)))
		e.Err = m
	default:
		r.fail(errors.New("unknown flow error cause"))
	}
	return e
}

// textCopy is textError with its text the host's own copy.
func (r *reader) textCopy() *TextError {
	e := r.textError()
	e.Message = strings.Clone(e.Message)
	return e
}

// end is the reader's error, or trailing bytes.
func (r *reader) end(b []byte) error {
	if r.err == nil && r.off != len(b) {
		r.err = errors.New("trailing bytes")
	}
	if r.err != nil {
		return malformed(r.err)
	}
	return nil
}

// put64 and put32 are appendU64 and appendU32 as calls, for the answers of
// flow calls: inlined, each is a hundred bytes of the module's code.
//
//go:noinline
func put64(dst []byte, v uint64) []byte { return appendU64(dst, v) }

//go:noinline
func put32(dst []byte, v uint32) []byte { return appendU32(dst, v) }

// DecodeLeaseState decodes an answer of AppendLeaseState.
func DecodeLeaseState(b []byte) (next time.Duration, token core.Token, interval time.Duration, tellBy time.Time, err error) {
	r := reader{b: b}
	if err := r.ok(); err != nil {
		return 0, 0, 0, time.Time{}, err
	}
	next, token, interval = time.Duration(r.u64()), core.Token(r.u64()), time.Duration(r.u64())
	tellBy = r.time(time.UTC)
	return next, token, interval, tellBy, r.end(b)
}

// DecodeLost decodes an answer of AppendLostAnswer: the cause is
// flow.ErrLeaseLost itself, or an error with the module's text that
// errors.Is-matches it.
func DecodeLost(b []byte) (cause error, lost bool, err error) {
	r := reader{b: b}
	if err := r.ok(); err != nil {
		return nil, false, err
	}
	if lost = r.u8() != 0; lost {
		cause = flow.ErrLeaseLost
		if text := r.textCopy(); text.Message != flow.ErrLeaseLost.Error() {
			cause = &LostError{Text: *text}
		}
	}
	return cause, lost, r.end(b)
}

// DecodeDuration decodes an answer of AppendDuration.
func DecodeDuration(b []byte) (time.Duration, error) {
	r := reader{b: b}
	if err := r.ok(); err != nil {
		return 0, err
	}
	d := time.Duration(r.u64())
	return d, r.end(b)
}

// ok reads an answer's status: nil for AnswerOK, else the refusal.
func (r *reader) ok() error {
	switch r.u8() {
	case AnswerOK:
		return nil
	case AnswerRefused:
		return r.refused()
	}
	return malformed(errors.New("unknown answer status"))
}

// LostError is a lost lease's cause with the last heartbeat's error
// joined to flow.ErrLeaseLost, rebuilt from its text.
type LostError struct{ Text TextError }

func (e *LostError) Error() string   { return e.Text.Message }
func (e *LostError) Unwrap() []error { return []error{flow.ErrLeaseLost, &e.Text} }

// put is appendText as a call (see put64).
//
//go:noinline
func put(dst []byte, err error) []byte { return appendText(dst, err) }
