package sim

import (
	"context"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// opRun is one event being applied for a server call, one store call at a
// time: each call takes effect when it is made, and its answer arrives after
// the store's latency, with the world going on in between. On the
// compare-and-set path the calls are a store.Op's (load, then a write); on
// the fast path there is one, Apply.
type opRun struct {
	// op (the compare-and-set path) or applied (the fast path's result) is
	// taken from the world's pool while an event is under way, and given
	// back once its caller heard the outcome (opAnswer): a kilobyte a
	// server call would otherwise allocate and clear.
	op      *store.Op
	applied *store.Applied
	held    *core.Record // the record the attempt's reserve left (Effect.Held), for its outcome
	err     error        // the fast path's error
	done    bool         // the fast path's one call was made
	ev      core.Event
	meta    opMeta
	st      store.Store // the store as this caller sees it (meta names it)
	view    callerApplier
	fast    bool // st is an Applier: one call, Apply
}

// runOp starts applying ev for c in r; done gets the outcome.
func (w *world) runOp(c *serverCall, r *opRun, kind uint8, meta opMeta, ev core.Event) {
	if r.st == nil {
		// The view lives in r: a server call's store view allocates nothing.
		r.view = callerApplier{callerStore{w.store, &r.meta}}
		var st store.Store = &r.view.callerStore
		if w.fastPath {
			st = &r.view
		}
		r.st = w.storeView(st)
		_, r.fast = r.st.(store.Applier)
	}
	if r.fast {
		if r.applied == nil {
			r.applied = w.pools.applied()
		}
		r.ev, r.done, r.err = ev, false, nil
	} else {
		if r.op == nil {
			r.op = w.pools.op()
		}
		r.op.Reset(w.scopes[meta.scope], ev, &w.policy)
		r.op.UseStep(w.step)
	}
	r.meta = meta
	w.opCall(c, r, kind)
}

// opCall makes r's pending store call now; its answer comes as kind.
func (w *world) opCall(c *serverCall, r *opRun, kind uint8) {
	lat := w.storeLatency()
	r.meta.returnAt = w.now + lat
	if r.fast {
		if r.held != nil {
			r.err = store.ApplyHeld(context.Background(), r.st, r.held, r.ev, &w.policy, r.applied)
		} else {
			r.err = store.Apply(context.Background(), r.st, w.scopes[r.meta.scope], r.ev, &w.policy, r.applied)
		}
		r.done = true
	} else {
		r.op.Do(context.Background(), r.st)
	}
	w.afterOnH(c.s, c.epoch, lat, c, kind)
}

// result is r's outcome once it is over (ok false: a store call is still to make).
func (r *opRun) result() (a *store.Applied, err error, ok bool) {
	if r.fast {
		return r.applied, r.err, r.done
	}
	a, err = r.op.Applied()
	return a, err, r.op.Done()
}

func (w *world) opAnswer(c *serverCall, r *opRun, kind uint8) {
	a, err, ok := r.result()
	if !ok {
		if r == c.main && ownerWrite(r.meta.event) && c.s.mayPause() && w.fault(FaultPause, w.rng.servers) {
			// The server freezes with the record it loaded in hand, and
			// writes when it wakes: a zombie whose compare-and-set must
			// fail, even if meanwhile the key's record expired, was
			// removed and a new one reached the version it expects.
			c.s.pauseLong(c.scope)
			c.s.runEvent(event{h: c, kind: evOpResume, srv: c.s, epoch: c.epoch})
			return
		}
		w.opCall(c, r, kind)
		return
	}
	m := &r.meta
	if kind == evTxStep {
		c.txDone(a, err) // not the Flow's: nothing for it to hear, count or recount
		w.pools.release(r)
		return
	}
	if err != nil {
		w.log(TraceEvent{Scope: m.scope, Actor: ActorServer, ActorID: c.s.id, What: WhatStoreError, Arg: int64(m.event)})
	} else {
		w.log(TraceEvent{Scope: m.scope, Actor: ActorServer, ActorID: c.s.id, What: WhatDecision, Token: a.Transition.Decision.Token, Arg: int64(a.Transition.Decision.Kind), Arg2: int64(m.event)})
	}
	switch {
	case kind == evHbStep:
		w.heard(m, a, err) // check_live.go: what the Lease is told, checked and recounted
		c.beaten(a, err)
		w.pools.release(r)
	case err != nil && !c.detached && c.att.gone:
		w.pools.release(r)
		c.call.Gone(context.Canceled) // as Do: the call failed and the client had hung up
		c.advance()
	default:
		w.heard(m, a, err)                              // what the Flow is told, checked and recounted
		w.check.flowHeard(c, m.event, c.sentAt, a, err) // check_flow.go
		c.call.Applied(a, err)
		w.pools.release(r) // the Flow read *a during Applied only
		c.advance()
	}
}
