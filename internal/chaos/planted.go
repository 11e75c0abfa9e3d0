package chaos

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// PhantomCompletions is s with a planted bug, for the harnesses' proofs
// that they can fail: one completion of an attempt in every (ApplyHeld, the
// executor's path) is acknowledged as written and never written. The
// record stays in progress (its lease runs out, the reconciler settles
// it), and the client told its answer was recorded got one the store never
// held. s must be a store.HeldApplier (the stores of this module are).
func PhantomCompletions(s store.Store, every int64) store.Store {
	return &phantom{Store: s, applier: s.(store.Applier), held: s.(store.HeldApplier), every: every}
}

type phantom struct {
	store.Store
	applier store.Applier
	held    store.HeldApplier
	every   int64
	n       atomic.Int64
}

func (p *phantom) Apply(ctx context.Context, sc core.Scope, ev core.Event, pol *core.Policy, a *store.Applied) error {
	return p.applier.Apply(ctx, sc, ev, pol, a)
}

func (p *phantom) ApplyHeld(ctx context.Context, held *core.Record, ev core.Event, pol *core.Policy, a *store.Applied) error {
	if ev.Kind != core.EventComplete || p.n.Add(1)%p.every != 0 {
		return p.held.ApplyHeld(ctx, held, ev, pol, a)
	}
	rec := *held
	ev.Now = time.Now()
	tr, err := core.Step(&rec, &ev, pol)
	if err != nil {
		return err
	}
	*a = store.Applied{Before: held.Status, Record: rec, Transition: tr, Now: ev.Now}
	return nil
}
