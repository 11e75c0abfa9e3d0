package wasmcore

import (
	"context"
	"errors"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/flow"
	"github.com/idemkit/idem/store"
	"github.com/idemkit/idem/wasm/internal/abi"
)

// Flow is a request's flow.Flow run in the module, with flow.Flow's calls:
// a host drives it exactly as it drives the native one (flow/doc.go), and
// the differential tests of this package hold the two to the same effects
// and answers, byte for byte in the ABI's encoding. It keeps one instance
// of the module from BeginFlow to Close, and is used by one goroutine at a
// time (its Lease too).
//
// What differs from the native Flow: an EffectRun's Attempt carries its
// scope, token and lease end, and nothing else (no CompleteIn); the
// module counts no metrics (a host counts with flow.Count); a failure of
// the module itself (a trap, an answer it cannot read) ends the flow with
// that error as its answer.
type Flow struct {
	h      *Host
	inst   *instance
	handle uint32
	scope  core.Scope

	ans  abi.FlowAnswer
	done bool // the module answered EffectAnswer, or failed
	// reported is the record of the last Applied reported, and held the
	// one of the attempt's reserve (Effect.Held), kept on the host: the
	// module sends only that an apply uses it.
	reported, held core.Record
	panicked       any    // what the action panicked with, raised again by the host
	raw            []byte // the last answer's bytes, when rawAnswers is set
}

// rawAnswers, set by the differential tests, keeps each answer's bytes in
// Flow.raw, to compare with the native Flow's encoding byte for byte.
var rawAnswers bool

// BeginFlow begins req under cfg in the module, as cfg.Begin would: a
// request the Flow refuses is refused here with the same error (a
// *flow.Error, or the policy's refusal). Close the Flow when done with it.
func (h *Host) BeginFlow(cfg flow.Config, req flow.Request) (*Flow, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return nil, ErrClosed
	}
	ctx := context.Background()
	inst, err := h.get(ctx)
	if err != nil {
		return nil, err
	}
	f := &Flow{h: h, inst: inst, scope: req.Scope}
	inst.request = abi.AppendBegin(inst.request[:0], &cfg, &req)
	if err := f.exchange(ctx); err != nil {
		f.release(ctx, err)
		return nil, err
	}
	if f.ans.Err != nil && f.ans.Effect.Kind == 0 { // refused at its beginning
		err := f.ans.Err
		f.h.put(ctx, f.inst)
		return nil, err
	}
	f.handle = f.ans.Handle
	return f, nil
}

// exchange sends inst.request to idem_flow and decodes the answer into
// f.ans, filling what the host keeps itself.
func (f *Flow) exchange(ctx context.Context) error {
	answer, err := f.inst.exchange(ctx, f.inst.flowFunc, abi.ExportFlow)
	if err != nil {
		return err
	}
	if rawAnswers {
		f.raw = append(f.raw[:0], answer...)
	}
	if err := abi.DecodeFlowAnswer(answer, &f.ans); err != nil {
		return err
	}
	eff := &f.ans.Effect
	switch eff.Kind {
	case flow.EffectRun:
		f.held = f.reported
		eff.Attempt.Scope = f.scope
	case flow.EffectAnswer:
		f.done = true
		eff.Panic = f.panicked
	}
	if f.ans.UsesHeld {
		eff.Held = &f.held
	}
	return nil
}

// report sends the call build appends for the flow's handle, as every
// report does, even past the end (the module answers a report out of step
// as the native Flow does); a flow whose module failed, or that was
// closed, takes no more reports.
func (f *Flow) report(build func(dst []byte, handle uint32) []byte) {
	if f.inst == nil {
		return
	}
	f.inst.request = build(f.inst.request[:0], f.handle)
	f.call()
}

// call sends inst.request and, if the module failed, ends the flow with
// that error.
func (f *Flow) call() {
	f.h.mu.RLock()
	defer f.h.mu.RUnlock()
	if f.h.closed {
		f.fail(ErrClosed)
		return
	}
	if err := f.exchange(context.Background()); err != nil {
		f.release(context.Background(), err)
	}
}

// fail ends the flow with err as its answer.
func (f *Flow) fail(err error) {
	f.ans = abi.FlowAnswer{Effect: flow.Effect{Kind: flow.EffectAnswer, Panic: f.panicked}, Err: err}
	f.done = true
}

// release ends the flow on a failure of the module: an instance that
// trapped is closed, never reused.
func (f *Flow) release(ctx context.Context, err error) {
	if errors.Is(err, ErrTrap) {
		f.inst.mod.Close(ctx)
	} else {
		f.h.put(ctx, f.inst)
	}
	f.inst = nil
	f.fail(err)
}

// Next is what the host must do now, as flow.Flow.Next.
func (f *Flow) Next() *flow.Effect { return &f.ans.Effect }

// Done reports whether the flow is over, as flow.Flow.Done.
func (f *Flow) Done() bool { return f.done }

// Result is the answer once Done, as flow.Flow.Result.
func (f *Flow) Result() (flow.Result, error) {
	if !f.done {
		return flow.Result{}, errors.New("idem: Flow.Result before the flow is done")
	}
	return f.ans.Result, f.ans.Err
}

// Applied reports how an EffectApply went, as flow.Flow.Applied.
func (f *Flow) Applied(a *store.Applied, err error) {
	if err == nil {
		f.reported = a.Record
	}
	f.report(func(dst []byte, h uint32) []byte { return abi.AppendApplied(dst, h, a, err) })
}

// Ran reports what the action returned, as flow.Flow.Ran. A panic is
// reported as a *flow.PanicError: its value crosses as text, and the
// final effect carries the value itself again.
func (f *Flow) Ran(resp core.Response, err error) {
	if p, ok := err.(*flow.PanicError); ok && f.ans.Effect.Kind == flow.EffectRun {
		f.panicked = p.Value // as the native Flow keeps it: only from a report in step
	}
	f.report(func(dst []byte, h uint32) []byte { return abi.AppendRan(dst, h, &resp, err) })
}

// Waited reports that an EffectWait ended after elapsed, as flow.Flow.Waited.
func (f *Flow) Waited(elapsed time.Duration) {
	f.report(func(dst []byte, h uint32) []byte { return abi.AppendWaited(dst, h, elapsed) })
}

// Gone reports that the caller went away, as flow.Flow.Gone.
func (f *Flow) Gone(err error) {
	f.report(func(dst []byte, h uint32) []byte { return abi.AppendGone(dst, h, err) })
}

// Close ends the flow in the module and gives its instance back.
func (f *Flow) Close() error {
	if f.inst == nil {
		return nil
	}
	ctx := context.Background()
	f.h.mu.RLock()
	defer f.h.mu.RUnlock()
	inst := f.inst
	f.inst = nil
	if f.h.closed {
		return ErrClosed
	}
	inst.request = abi.AppendEnd(inst.request[:0], f.handle)
	if _, err := inst.exchange(ctx, inst.flowFunc, abi.ExportFlow); err != nil {
		inst.mod.Close(ctx)
		return err
	}
	f.h.put(ctx, inst)
	return nil
}
