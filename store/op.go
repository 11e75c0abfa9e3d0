package store

import (
	"context"
	"errors"

	"github.com/idemkit/idem/core"
)

// conflictsMax bounds how often one Op loads again after losing a
// compare-and-set race. Each loss means another writer made progress on the
// scope, so the bound is only reached under pathological contention.
const conflictsMax = 64

// Op applies one event to one scope by core's caller contract, one store call
// at a time: load, step, write; on a lost race, load again. It starts no
// goroutine and reads no clock, so that its host (Apply, or the simulator on
// virtual time) decides when each call happens. The protocol matches the
// executor's Flow: Next says what to do, Do does it and reports back, Done
// says it is over, and Applied reads the answer.
type Op struct {
	policy *core.Policy
	scope  core.Scope
	event  core.Event
	step   core.StepFunc // nil: core.Step; else a Stepper's (UseStep)
	// stepEvent is the copy of the event handed to step: a function value
	// makes its argument escape, and a copy on the stack would then be an
	// allocation at every step.
	stepEvent core.Event

	next      Method
	applied   Applied
	conflicts int
	err       error
}

// NewOp prepares ev for scope. Now, and for Reserve the token, come from the
// store's snapshot; whatever ev holds there is replaced.
func NewOp(scope core.Scope, ev core.Event, p *core.Policy) *Op {
	o := new(Op)
	o.Reset(scope, ev, p)
	return o
}

// Reset makes o a new Op for ev, as NewOp does, so that a host applying many
// events can reuse one Op instead of allocating each.
func (o *Op) Reset(scope core.Scope, ev core.Event, p *core.Policy) {
	*o = Op{policy: p, scope: scope, event: ev, next: MethodLoad}
}

// UseStep makes o step its event through step instead of core.Step (after
// Reset, which sets core.Step again): for a host that runs another build of
// the core.
func (o *Op) UseStep(step core.StepFunc) {
	if step != nil {
		o.step = step
	}
}

// Next is the store method Do will call next, or MethodNone once Done.
func (o *Op) Next() Method { return o.next }

// Done reports whether the Op is over and Applied holds its answer.
func (o *Op) Done() bool { return o.next == MethodNone }

// Applied is the answer once Done: what the event did, or an error. An
// *Error means the store failed: after a failed write, the Applied is the
// write that may or may not have applied (an ambiguous commit); after a
// failed load it is zero. Any other error is the core refusing the event as
// bad input. The Applied belongs to o and is valid until o is Reset.
func (o *Op) Applied() (*Applied, error) { return &o.applied, o.err }

// Do calls the next method on s and advances. Calling it once Done does
// nothing.
func (o *Op) Do(ctx context.Context, s Store) {
	var err error
	switch o.next {
	case MethodNone:
		return
	case MethodLoad:
		var snap Snapshot
		if snap, err = s.Load(ctx, o.scope); err == nil {
			o.loaded(&snap)
			return
		}
	case MethodInsert:
		err = s.Insert(ctx, &o.applied.Record)
	case MethodCompareAndSet:
		w := &o.applied.Transition.Write
		err = s.CompareAndSet(ctx, &o.applied.Record, w.ExpectVersion, w.ExpectToken)
	case MethodDelete:
		w := &o.applied.Transition.Write
		err = s.Delete(ctx, o.scope, w.ExpectVersion, w.ExpectToken)
	}
	switch {
	case err == nil:
		o.finish(nil)
	case errors.Is(err, ErrConflict) && o.next != MethodLoad:
		o.conflicts++
		if o.conflicts >= conflictsMax {
			o.finish(&Error{Method: o.next, Err: errContention})
			return
		}
		o.next = MethodLoad
	default:
		o.finish(&Error{Method: o.next, Err: err})
	}
}

func (o *Op) loaded(snap *Snapshot) {
	ev := o.event
	ev.Now = snap.Now
	if ev.Kind == core.EventReserve {
		ev.Token = snap.FreshToken
	}
	o.applied = Applied{Before: snap.Record.Status, Record: snap.Record, Now: snap.Now}
	o.applied.Record.Scope = o.scope
	var res core.Transition
	var err error
	if o.step == nil {
		res, err = core.Step(&o.applied.Record, &ev, o.policy)
	} else {
		o.stepEvent = ev // a copy the step may not keep (see Op.stepEvent)
		res, err = o.step(&o.applied.Record, &o.stepEvent, o.policy)
		o.stepEvent = core.Event{} // keeps no response alive
	}
	if err != nil {
		if DriverBug(err) {
			o.finish(&Error{Method: MethodLoad, Err: err})
		} else {
			o.next, o.err = MethodNone, err
		}
		return
	}
	o.applied.Transition = res
	switch res.Write.Kind {
	case core.WriteInsert:
		o.next = MethodInsert
	case core.WriteUpdate:
		o.next = MethodCompareAndSet
	case core.WriteDelete:
		o.next = MethodDelete
	default:
		o.finish(nil)
	}
}

func (o *Op) finish(err error) {
	if err != nil && o.next == MethodLoad {
		o.applied = Applied{} // nothing of an earlier round may pass for what this event did
	}
	o.next, o.err = MethodNone, err
}

// Apply applies ev to scope over s and fills *out with what happened:
// through s's Apply when it is an Applier, else by driving an Op to the end.
// A store failure is an *Error; any other error is the core refusing the
// event. On an error *out is the zero Applied: nothing of an earlier event
// may pass for this one's outcome. Apply counts nothing: its caller does,
// from what it returns.
func Apply(ctx context.Context, s Store, scope core.Scope, ev core.Event, p *core.Policy, out *Applied) error {
	if a, ok := s.(Applier); ok {
		return applierErr(a.Apply(ctx, scope, ev, p, out), out)
	}
	var op Op
	op.Reset(scope, ev, p)
	op.UseStep(stepOf(s))
	for !op.Done() {
		op.Do(ctx, s)
	}
	a, err := op.Applied()
	if err != nil {
		*out = Applied{} // an ambiguous write is not what this call did
		return err
	}
	*out = *a
	return nil
}

// applierErr is what Apply and ApplyHeld return for err, the error of a
// store's own Apply: nil, the core's refusal as is, or a store failure as an
// *Error; on an error *out is cleared.
func applierErr(err error, out *Applied) error {
	if err == nil {
		return nil
	}
	if !BadInput(err) {
		err = &Error{Method: MethodApply, Err: err}
	}
	*out = Applied{}
	return err
}
