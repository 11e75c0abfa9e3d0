package abi

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/flow"
	"github.com/idemkit/idem/store"
)

// ExportFlow is the export that runs the executor's protocol (package
// flow) in the guest: (size i32) -> i64, the call in the first size bytes
// of the input buffer, answered as idem_step is (ABI.md, "Flow").
const ExportFlow = "idem_flow"

// Flow calls: the first byte of a flow call. Every call but FlowBegin
// names its flow by the u32 handle FlowBegin answered.
const (
	FlowBegin       = 1 // config, request: starts a flow (a handle and its first effect)
	FlowApplied     = 2 // the EffectApply's outcome: a store.Applied or a store error
	FlowRan         = 3 // the EffectRun's outcome: a response, or what the action's error was
	FlowWaited      = 4 // the EffectWait ended after elapsed
	FlowGone        = 5 // the caller went away during an EffectApply or EffectWait
	FlowLease       = 6 // starts the running attempt's lease, granted by a reserve sent at sent
	FlowBeaten      = 7 // a heartbeat sent at sent, heard at now, and its outcome
	FlowLost        = 8 // whether the action must be told now that its lease is lost
	FlowBeatTimeout = 9 // how long a heartbeat sent now may take
	FlowEnd         = 10
)

// Answer status of a flow call besides AnswerOK and AnswerRefused (a call
// the guest could not decode, or a handle it does not know: SentinelMalformedRequest).
const (
	// AnswerFlowError: FlowBegin refused the request (an invalid key or
	// scope, a missing fingerprint): an answer error follows (AppendFlowError).
	AnswerFlowError = 2
)

// Error kinds an answer or a report names, so that errors.Is answers on the
// host as it would natively for what hosts and callers test.
const (
	ErrKindOther    = 0
	ErrKindCanceled = 1 // wraps context.Canceled
	ErrKindDeadline = 2 // wraps context.DeadlineExceeded
	ErrKindPanic    = 3 // a ran report only: the action panicked (flow.PanicError)
	ErrKindFlow     = 4 // an answer only: a *flow.Error (code, status, retry after, its cause's text)
	ErrKindHasPanic = 5 // a ran report only: an error that wraps a flow.PanicError (not one itself)
)

// Outcome tags of a ran report.
const (
	RanResponse    = 0 // a response follows
	RanNotExecuted = 1 // the action proved it did nothing: str code, str message
	RanError       = 2 // u8 error kind, str message
)

// AppendBegin appends a FlowBegin call.
func AppendBegin(dst []byte, c *flow.Config, req *flow.Request) []byte {
	dst = append(dst, FlowBegin)
	dst = appendPolicy(dst, &c.Policy)
	dst = appendU64(dst, uint64(c.OutcomeTimeout))
	dst = appendU64(dst, uint64(c.HeartbeatInterval))
	dst = appendScope(dst, &req.Scope)
	return append(dst, req.Fingerprint[:]...)
}

// AppendApplied appends a FlowApplied call: a (which the Flow reads) when
// err is nil, else err's sentinel index, whether it is the store's
// rejection, and its text.
func AppendApplied(dst []byte, handle uint32, a *store.Applied, err error) []byte {
	dst = appendHandle(dst, FlowApplied, handle)
	if err != nil {
		return appendText(append(dst, 1), err)
	}
	dst = append(dst, 0, byte(a.Before))
	dst = appendRecord(dst, &a.Record)
	dst = appendTransition(dst, &a.Transition)
	return appendTime(dst, a.Now)
}

// AppendRan appends a FlowRan call for what the action returned.
func AppendRan(dst []byte, handle uint32, resp *core.Response, err error) []byte {
	dst = appendHandle(dst, FlowRan, handle)
	var notExecuted *flow.NotExecutedError
	switch {
	case err == nil:
		return appendResponse(append(dst, RanResponse), resp)
	case errors.As(err, &notExecuted):
		dst = appendString(append(dst, RanNotExecuted), string(notExecuted.Code))
		return appendString(dst, err.Error())
	}
	if p, ok := err.(*flow.PanicError); ok { // as the Flow tests it: the error itself
		dst = append(dst, RanError, ErrKindPanic, SentinelUnidentified, 0)
		return appendString(dst, strings.TrimPrefix(p.Error(), panicPrefix))
	}
	kind := errKind(err)
	var wrapped *flow.PanicError
	if errors.As(err, &wrapped) {
		kind = ErrKindHasPanic
	}
	return appendTextKind(append(dst, RanError), kind, err)
}

// AppendWaited, AppendGone and AppendEnd append those calls.
func AppendWaited(dst []byte, handle uint32, elapsed time.Duration) []byte {
	return appendU64(appendHandle(dst, FlowWaited, handle), uint64(elapsed))
}

func AppendGone(dst []byte, handle uint32, err error) []byte {
	return appendText(appendHandle(dst, FlowGone, handle), err)
}

func AppendEnd(dst []byte, handle uint32) []byte { return appendHandle(dst, FlowEnd, handle) }

// AppendLease, AppendBeaten, AppendLost and AppendBeatTimeout append the
// lease's calls; times are the host's clock.
func AppendLease(dst []byte, handle uint32, sent time.Time) []byte {
	return appendTime(appendHandle(dst, FlowLease, handle), sent)
}

func AppendBeaten(dst []byte, handle uint32, sent, now time.Time, a *store.Applied, err error) []byte {
	dst = AppendApplied(dst, handle, a, err)
	dst[0] = FlowBeaten
	dst = appendTime(dst, sent)
	return appendTime(dst, now)
}

func AppendLost(dst []byte, handle uint32, now time.Time) []byte {
	return appendTime(appendHandle(dst, FlowLost, handle), now)
}

func AppendBeatTimeout(dst []byte, handle uint32, now time.Time) []byte {
	return appendTime(appendHandle(dst, FlowBeatTimeout, handle), now)
}

// panicPrefix is what flow.PanicError's text puts before its value's.
const panicPrefix = "action panicked: "

func appendHandle(dst []byte, call byte, handle uint32) []byte {
	return appendU32(append(dst, call), handle)
}

func appendTransition(dst []byte, t *core.Transition) []byte {
	dst = append(dst, byte(t.Decision.Kind))
	dst = appendU64(dst, uint64(t.Decision.Token))
	dst = appendU64(dst, uint64(t.Decision.RetryAfter))
	dst = append(dst, byte(t.Write.Kind))
	dst = appendU64(dst, t.Write.ExpectVersion)
	return appendU64(dst, uint64(t.Write.ExpectToken))
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func errKind(err error) byte {
	switch {
	case errors.Is(err, context.Canceled):
		return ErrKindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return ErrKindDeadline
	}
	return ErrKindOther
}

// appendText writes an error as what the other side rebuilds it from: its
// kind, the core sentinel it wraps (a refusal's index), whether it wraps
// the store's rejection (store.ErrRejected), and its text.
func appendText(dst []byte, err error) []byte { return appendTextKind(dst, errKind(err), err) }

func appendTextKind(dst []byte, kind byte, err error) []byte {
	dst = append(dst, kind, SentinelOf(err), boolByte(errors.Is(err, store.ErrRejected)))
	return appendString(dst, err.Error())
}

// TextError is an error rebuilt from appendText: its text, and the errors
// it wrapped that hosts, the Flow and callers test with errors.Is (the
// context's two, the core's refusals, the store's rejection).
type TextError struct {
	Message  string
	Kind     uint8
	Sentinel error // the core sentinel it wrapped, or nil
	Rejected bool  // it wrapped store.ErrRejected
}

func (e *TextError) Error() string { return e.Message }

func (e *TextError) Unwrap() []error {
	var errs []error
	switch e.Kind {
	case ErrKindCanceled:
		errs = append(errs, context.Canceled)
	case ErrKindDeadline:
		errs = append(errs, context.DeadlineExceeded)
	case ErrKindHasPanic:
		errs = append(errs, &flow.PanicError{Value: "(the value crossed as the error's text)"})
	}
	if e.Sentinel != nil {
		errs = append(errs, e.Sentinel)
	}
	if e.Rejected {
		errs = append(errs, store.ErrRejected)
	}
	return errs
}

// textError reads what appendText wrote.
func (r *reader) textError() *TextError {
	e := &TextError{Kind: r.c8()}
	if sentinel := r.c8(); int(sentinel) < len(Sentinels) {
		e.Sentinel = Sentinels[sentinel]
	}
	e.Rejected = r.c8() != 0
	e.Message = r.cstr()
	return e
}

// NotExecutedText is an action's error that wrapped a
// *flow.NotExecutedError, rebuilt from its text and the code: errors.As
// finds the NotExecutedError, with that code, as the Flow looks for it.
type NotExecutedText struct {
	Message string
	Inner   flow.NotExecutedError
}

func (e *NotExecutedText) Error() string { return e.Message }
func (e *NotExecutedText) Unwrap() error { return &e.Inner }

// cloneResponse copies r's headers and body, which a decoded answer
// aliases from the module's memory.
func cloneResponse(r *core.Response) {
	if r.Headers != nil {
		hs := make([]core.Header, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = core.Header{Name: strings.Clone(h.Name), Value: strings.Clone(h.Value)}
		}
		r.Headers = hs
	}
	if r.Body != nil {
		r.Body = append(make([]byte, 0, len(r.Body)), r.Body...)
	}
}
