package idem

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemkit/idem/core"
)

// conflictsMax bounds how often one Op loads again after losing a
// compare-and-set race. Each loss means another writer made progress on the
// scope, so the bound is only reached under pathological contention.
const conflictsMax = 64

// StoreError wraps an error a Store returned, naming the call. The executor
// maps it to ErrStoreUnavailable; for a write, the write may have applied.
type StoreError struct {
	Call string // "load", "insert", "compare_and_set", "delete", "due", "wait"
	Err  error
}

func (e *StoreError) Error() string { return fmt.Sprintf("idem: store %s: %v", e.Call, e.Err) }
func (e *StoreError) Unwrap() error { return e.Err }

// errContention is the cause when an Op lost conflictsMax races in a row.
var errContention = errors.New("idem: too many concurrent writes to one scope")

// OpStep is the store call an Op needs next.
type OpStep uint8

const (
	OpLoad OpStep = iota
	OpInsert
	OpCompareAndSet
	OpDelete
	OpDone
)

var opStepNames = [...]string{"load", "insert", "compare_and_set", "delete", "done"}

func (s OpStep) String() string {
	if int(s) < len(opStepNames) {
		return opStepNames[s]
	}
	return fmt.Sprintf("op_step(%d)", uint8(s))
}

// Op applies one event to one scope by core's caller contract, one store call
// at a time: load, step, write; on a lost race, load again. It starts no
// goroutine and reads no clock, so that a host (the blocking ApplyOver, or
// the simulator on virtual time) decides when each call happens.
type Op struct {
	policy  *Policy
	metrics Metrics
	scope   Scope
	event   core.Event

	step      OpStep
	applied   Applied
	conflicts int
	err       error
}

// NewOp prepares ev for scope. Now, and for Reserve the token, come from the
// store's snapshot; whatever ev holds there is replaced.
func NewOp(p *Policy, m Metrics, scope Scope, ev core.Event) *Op {
	o := new(Op)
	o.Reset(p, m, scope, ev)
	return o
}

// Reset makes o a new Op for ev, as NewOp does, so that a host applying many
// events can reuse one Op instead of allocating each.
func (o *Op) Reset(p *Policy, m Metrics, scope Scope, ev core.Event) {
	if m == nil {
		m = NopMetrics{}
	}
	*o = Op{policy: p, metrics: m, scope: scope, event: ev}
}

// Pending is the store call Do will make next, or OpDone.
func (o *Op) Pending() OpStep { return o.step }

// Result is the outcome once Pending is OpDone. A *StoreError means the store
// failed: after a failed write, Applied is the write that may or may not have
// applied (an ambiguous commit); after a failed load, Applied is zero. Any
// other error is the core refusing the event as bad input.
func (o *Op) Result() (Applied, error) { return o.applied, o.err }

// Do makes the pending store call on s and advances. Calling it when Pending
// is OpDone does nothing.
func (o *Op) Do(ctx context.Context, s Store) {
	var err error
	switch o.step {
	case OpDone:
		return
	case OpLoad:
		var snap Snapshot
		if snap, err = s.Load(ctx, o.scope); err == nil {
			o.loaded(&snap)
			return
		}
	case OpInsert:
		err = s.Insert(ctx, &o.applied.Record)
	case OpCompareAndSet:
		err = s.CompareAndSet(ctx, &o.applied.Record, o.applied.Result.Write.ExpectVersion, o.applied.Result.Write.ExpectToken)
	case OpDelete:
		err = s.Delete(ctx, o.scope, o.applied.Result.Write.ExpectVersion, o.applied.Result.Write.ExpectToken)
	}
	switch {
	case err == nil:
		o.finish(nil)
	case errors.Is(err, ErrConflict) && o.step != OpLoad:
		o.conflicts++
		if o.conflicts >= conflictsMax {
			o.finish(&StoreError{Call: o.step.String(), Err: errContention})
			return
		}
		o.step = OpLoad
	default:
		o.finish(&StoreError{Call: o.step.String(), Err: err})
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
	res, err := core.Step(&o.applied.Record, &ev, o.policy)
	if err != nil {
		if DriverBug(err) {
			o.finish(&StoreError{Call: "load", Err: err})
		} else {
			o.step, o.err = OpDone, err
		}
		return
	}
	o.applied.Result = res
	switch res.Write.Kind {
	case core.WriteInsert:
		o.step = OpInsert
	case core.WriteUpdate:
		o.step = OpCompareAndSet
	case core.WriteDelete:
		o.step = OpDelete
	default:
		o.finish(nil)
	}
}

func (o *Op) finish(err error) {
	if err != nil && o.step == OpLoad {
		o.applied = Applied{} // nothing of an earlier round may pass for the outcome
	}
	o.step, o.err = OpDone, err
	if err != nil {
		o.metrics.Add(CounterStoreError, Labels{UseCase: o.scope.UseCase, Outcome: o.event.Kind.String()}, 1)
		return
	}
	observe(o.metrics, o.event.Kind, &o.applied)
}

// ApplyOver applies ev to scope over s and returns what happened: ApplyInto
// with an Applied of its own. A host that applies many events keeps one
// Applied and calls ApplyInto, which allocates and copies less.
func ApplyOver(ctx context.Context, s Store, p *Policy, m Metrics, scope Scope, ev core.Event) (Applied, error) {
	var a Applied
	err := ApplyInto(ctx, s, p, m, scope, ev, &a)
	return a, err
}

// ApplyInto applies ev to scope over s and fills *out with what happened:
// through s's Apply when it is an Applier, else by driving an Op to the end.
// On an error *out is the zero Applied: nothing of an earlier event may pass
// for this one's outcome.
func ApplyInto(ctx context.Context, s Store, p *Policy, m Metrics, scope Scope, ev core.Event, out *Applied) error {
	if m == nil {
		m = NopMetrics{}
	}
	if a, ok := s.(Applier); ok {
		err := a.Apply(ctx, scope, ev, p, out)
		switch {
		case err == nil:
			observe(m, ev.Kind, out)
			return nil
		case isCoreError(err):
		default:
			m.Add(CounterStoreError, Labels{UseCase: scope.UseCase, Outcome: ev.Kind.String()}, 1)
			err = &StoreError{Call: "apply", Err: err}
		}
		*out = Applied{}
		return err
	}
	op := NewOp(p, m, scope, ev)
	for op.Pending() != OpDone {
		op.Do(ctx, s)
	}
	var err error
	if *out, err = op.Result(); err != nil {
		*out = Applied{} // Op.Result's ambiguous write is not this call's outcome
	}
	return err
}

// DriverBug reports whether err is the core refusing what the store handed
// it: a record it could not have produced, or a token that is not fresh.
// Those are failures of the store (a broken driver), not bad input of the
// caller.
func DriverBug(err error) bool {
	return errors.Is(err, core.ErrInvalidRecord) || errors.Is(err, core.ErrTokenNotFresh)
}

// isCoreError reports whether err is the core refusing the caller's input.
func isCoreError(err error) bool { return core.Refused(err) && !DriverBug(err) }
