package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	"github.com/idemkit/idem/store"
)

var errStoreDown = errors.New("sim: store unavailable (injected)")

// opMeta says who is behind a store call, for the checkers: the actor, the
// event it applies, and the attempt's own token (which a broken baseline
// may not be the token it writes with).
type opMeta struct {
	actor    Actor
	actorID  int32
	scope    int32
	event    core.EventKind
	attempt  core.Token
	returnAt int64 // when the caller hears back, for the linearizability history
	// now is the store's time of the event the caller applies: what its
	// last Load read (load, step, then write) or its Apply ran at. The
	// lifecycle checker holds the write that follows to it.
	now time.Time
	// finding is what the reconciler's last Check found, for the Resolve
	// it applies next (nil for other callers).
	finding *findingSeen
	// worker is the worker actor behind the calls (nil for a server).
	worker *workerActor
	// holdsCompletion: after the caller's last store call for a Complete,
	// the store held that completion of its attempt (what Result.Recorded
	// may claim).
	holdsCompletion bool
}

// ownToken reports whether the caller writes with a token of its own, in
// m.attempt: a server (its attempt's) or an operator (the one they read).
// The sweeper and the reconciler write with the record's.
func (m *opMeta) ownToken() bool { return m.actor == ActorServer || m.actor == ActorOperator }

// heard notes the record a server's Complete found or left, with ev, the
// Complete, when known (its response is then compared too).
func (m *opMeta) heard(rec *core.Record, ev *core.Event) {
	if m.actor == ActorServer && m.event == core.EventComplete {
		m.holdsCompletion = rec.Status == core.StatusCompleted && rec.Token == m.attempt && (ev == nil || sameResponse(rec.Response, ev.Response))
	}
}

// faultyStore puts the real memory store behind the store faults of SPEC §8:
// errors before a call applies, errors after a write applied (an ambiguous
// commit), and latency (which the world adds around each call). Callers
// reach it through a callerStore, which names who is calling.
type faultyStore struct {
	w     *world
	inner innerStore
}

// innerStore is the store the faults are put around: the memory store (in
// a checker's test, a broken store around it).
type innerStore interface {
	store.Store
	store.Applier
}

// callerStore is the faulty store as one caller sees it: every call through
// it is attributed to *meta, which the caller keeps up to date (the event
// it applies, when it hears back). On the seeds that draw the memory
// store's fast path (Config.StorePath), it is also a store.Applier, with the
// same faults around Apply.
type callerStore struct {
	s    *faultyStore
	meta *opMeta
}

// view returns the store for a caller described by meta: its own methods,
// and the inner store's fast path on the seeds that use it.
func (s *faultyStore) view(meta *opMeta) store.Store {
	if s.w.fastPath {
		return callerApplier{callerStore{s, meta}}
	}
	return callerStore{s, meta}
}

// StepFunc implements store.Stepper: store.Apply and store.Op step what
// the caller applies through the core the memory store runs (the checker
// watching every transition), as they would find it below a store.Wrap.
func (c callerStore) StepFunc() core.StepFunc { return c.s.w.step }

var (
	_ store.Store   = callerStore{}
	_ store.Stepper = callerStore{}
	_ store.Applier = callerApplier{}
)

func (s *faultyStore) failBefore() bool { return s.w.fault(FaultStoreErrorBefore, s.w.rng.store) }

// storeColumnBytes is the largest response body the store holds while it
// rejects (FaultStoreReject): the gateway's large answers are over it.
const storeColumnBytes = 32 << 10

// rejects reports whether the store rejects, for good, a write that stores
// resp (store.ErrRejected): on the seeds with FaultStoreReject, until the
// faults stop (an operator widened the column). It is not drawn per call:
// the same write is rejected every time.
func (s *faultyStore) rejects(resp *core.Response) bool {
	return s.w.rates[FaultStoreReject] > 0 && !s.w.healed && len(resp.Body) > storeColumnBytes
}

// rejectsKey reports whether the store rejects, for good, an insert of a
// record of key: on the same seeds, the keys that end in 'f' (a sixteenth:
// a constraint the key breaks), until the faults stop. A reserve of such a
// key is rejected, and must be answered as a rejection, not an outage.
func (s *faultyStore) rejectsKey(key string) bool {
	return s.w.rates[FaultStoreReject] > 0 && !s.w.healed && key != "" && key[len(key)-1] == 'f'
}

// errKeyRejected is the store's rejection of an insert of a record of a key it
// cannot hold.
var errKeyRejected = fmt.Errorf("sim: the store rejects a record of this key (a constraint): %w", store.ErrRejected)

// rejected is the store's rejection of a write of resp, told to the caller's
// meta: a reconciler's finding that the store rejects is rescheduled as
// still unknown, which is what the lifecycle checker must then see.
func (c callerStore) rejected(scope core.Scope, token core.Token, resp *core.Response) error {
	if f := c.meta.finding; f != nil && f.verdict == core.VerdictExecuted {
		f.verdict, f.response = core.VerdictStillUnknown, core.Response{}
		if i, ok := c.s.w.scopeIndex(scope); ok && c.meta.worker != nil {
			c.s.w.check.findingRejected(c.meta.worker, i, token) // check_workers.go
		}
	}
	c.s.w.log(TraceEvent{Scope: c.meta.scope, Actor: ActorStore, What: WhatStoreRejected, Arg: int64(len(resp.Body))})
	return fmt.Errorf("sim: a %d-byte response is over the store's column (%d bytes): %w", len(resp.Body), storeColumnBytes, store.ErrRejected)
}

func (c callerStore) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	w := c.s.w
	c.calling(scope)
	if c.s.failBefore() {
		w.history(c.meta, linearizability.StoreOperation{Kind: store.MethodLoad, Scope: scope, Ended: linearizability.EndedFailed})
		return store.Snapshot{}, errStoreDown
	}
	snap, err := c.s.inner.Load(ctx, scope)
	if err == nil {
		w.history(c.meta, linearizability.StoreOperation{Kind: store.MethodLoad, Scope: scope, Record: snap.Record, FreshToken: snap.FreshToken, Ended: linearizability.EndedOK})
		c.meta.now = snap.Now
		c.meta.heard(&snap.Record, nil)
		w.check.life.loaded("Load", &snap.Record)
		if snap.Record.Exists() && w.fault(FaultStoreTokenStale, w.rng.store) {
			// A driver bug the core must stop: a "fresh" token that is the
			// record's own. A reserve that would create an attempt with it is
			// refused (ErrTokenNotFresh), so two attempts never share a
			// token; the lifecycle checker holds every new attempt's token
			// above its record's.
			snap.FreshToken = snap.Record.Token
		}
	}
	return snap, err
}

// write makes the write of kind (rec is the record written, or for a delete
// just its scope) and reports it to the checkers; then it may pretend the
// write failed.
func (c callerStore) write(ctx context.Context, kind core.WriteKind, rec *core.Record, v uint64, t core.Token) error {
	s, w := c.s, c.s.w
	c.calling(rec.Scope)
	if s.failBefore() {
		c.record(kind, rec, v, t, linearizability.EndedFailed)
		return errStoreDown
	}
	if kind != core.WriteDelete && s.rejects(&rec.Response) {
		c.record(kind, rec, v, t, linearizability.EndedFailed)
		return c.rejected(rec.Scope, rec.Token, &rec.Response)
	}
	if kind == core.WriteInsert && s.rejectsKey(rec.Scope.Key) {
		c.record(kind, rec, v, t, linearizability.EndedFailed)
		return errKeyRejected
	}
	var err error
	switch kind {
	case core.WriteInsert:
		err = s.inner.Insert(ctx, rec)
	case core.WriteUpdate:
		err = s.inner.CompareAndSet(ctx, rec, v, t)
	case core.WriteDelete:
		err = s.inner.Delete(ctx, rec.Scope, v, t)
	}
	if err != nil {
		c.record(kind, rec, v, t, linearizability.EndedConflict)
		return err
	}
	c.applied(rec, kind, core.Write{Kind: kind, ExpectVersion: v, ExpectToken: t}, nil)
	if w.fault(FaultStoreErrorAfter, w.rng.store) {
		w.log(TraceEvent{Scope: c.meta.scope, Actor: ActorStore, What: WhatFaultAfter, Token: rec.Token})
		c.record(kind, rec, v, t, linearizability.EndedIndeterminate) // the caller cannot tell it applied
		return errStoreDown
	}
	c.record(kind, rec, v, t, linearizability.EndedOK)
	return nil
}

// record adds a write to the history, for -lincheck only: the operation is
// large, and most runs do not check it.
func (c callerStore) record(kind core.WriteKind, rec *core.Record, v uint64, t core.Token, ended linearizability.Ending) {
	if !c.s.w.cfg.LinCheck {
		return
	}
	op := linearizability.StoreOperation{Scope: rec.Scope, ExpectVersion: v, ExpectToken: t, Ended: ended}
	switch kind {
	case core.WriteInsert:
		op.Kind, op.Record, op.ExpectVersion, op.ExpectToken = store.MethodInsert, *rec, 0, 0
	case core.WriteUpdate:
		op.Kind, op.Record = store.MethodCompareAndSet, *rec
	case core.WriteDelete:
		op.Kind = store.MethodDelete
	}
	c.s.w.history(c.meta, op)
}

func (c callerStore) Insert(ctx context.Context, rec *core.Record) error {
	return c.write(ctx, core.WriteInsert, rec, 0, 0)
}

func (c callerStore) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, t core.Token) error {
	return c.write(ctx, core.WriteUpdate, rec, v, t)
}

func (c callerStore) Delete(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	return c.write(ctx, core.WriteDelete, &core.Record{Scope: scope}, v, t)
}

func (c callerStore) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	if c.s.failBefore() {
		return nil, errStoreDown
	}
	recs, err := c.s.inner.Due(ctx, kind, limit)
	for i := range recs {
		c.s.w.check.life.due(kind, &recs[i])
	}
	if err == nil {
		// The store's time of the listing: exact on virtual time; in a
		// live run, a reading taken after it (no record listed can be due
		// later than that, but one may have become due since).
		now, exact := epoch.Add(time.Duration(c.s.w.storeClock.last)), true
		if c.s.w.liveClock != nil {
			now, exact = c.s.w.liveClock(), false
		}
		c.s.w.check.listedDue(kind, limit, now, exact, recs)
	}
	return recs, err
}

// Wait is here to satisfy store.Store: the servers' in-flight waits call
// the memory store's own Wait (wait.go).
func (c callerStore) Wait(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	return c.s.inner.Wait(ctx, scope, v, t)
}

// callerApplier is callerStore on the seeds that use the memory store's
// fast path: Apply puts the store faults around the memory store's, an
// error before it applies and an error after its write applied.
type callerApplier struct{ callerStore }

// Apply implements store.Applier.
func (c callerApplier) Apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
	{
		s, w := c.s, c.s.w
		c.calling(scope)
		op := linearizability.LifecycleOperation{Scope: scope, Event: ev}
		if s.failBefore() {
			op.Ended = linearizability.EndedFailed
			w.lifeHistory(c.meta, op)
			return errStoreDown
		}
		if ev.Kind == core.EventReserve && s.rejectsKey(scope.Key) {
			// The statement would insert the record: rejected whatever it finds.
			op.Ended = linearizability.EndedFailed
			w.lifeHistory(c.meta, op)
			return errKeyRejected
		}
		if storesResponse(&ev) && s.rejects(&ev.Response) {
			// The statement carries the response: rejected whatever the
			// record holds (as a database rejects a value for its column).
			op.Ended = linearizability.EndedFailed
			w.lifeHistory(c.meta, op)
			return c.rejected(scope, ev.Token, &ev.Response)
		}
		err := c.s.inner.Apply(ctx, scope, ev, p, out) // the memory store's errors are the core's: nothing written
		op.SetApplied(ev, out, err)
		if err != nil {
			w.lifeHistory(c.meta, op)
			return err
		}
		c.meta.now = out.Now
		i, known := w.scopeIndex(scope)
		if known {
			w.check.life.decided(c.meta, i, &w.shadow[i], &ev, out)
		}
		if out.Transition.Write.Kind == core.WriteNone {
			c.meta.heard(&out.Record, &ev)
		} else {
			c.applied(&out.Record, out.Transition.Write.Kind, out.Transition.Write, &ev)
			if w.fault(FaultStoreErrorAfter, w.rng.store) {
				w.log(TraceEvent{Scope: c.meta.scope, Actor: ActorStore, What: WhatFaultAfter, Token: out.Record.Token})
				op.Ended, op.WriteKnown = linearizability.EndedIndeterminate, true
				w.lifeHistory(c.meta, op)
				return errStoreDown
			}
		}
		w.lifeHistory(c.meta, op)
		return nil
	}
}

// storesResponse reports whether ev asks the store to keep its response.
func storesResponse(ev *core.Event) bool {
	return ev.Kind == core.EventComplete || (ev.Kind == core.EventResolve && ev.Verdict == core.VerdictExecuted)
}

// applied reports a write the store applied for the caller, of kind under
// the precondition expect (ev: the event behind it, when known), to the
// lifecycle checker, which holds it against the shadow as it is before the
// write, and then to the world. (The world may wake servers that write in
// turn, so the checker hears of this write first.)
func (c callerStore) applied(rec *core.Record, kind core.WriteKind, expect core.Write, ev *core.Event) {
	w := c.s.w
	if scope, ok := w.scopeIndex(rec.Scope); ok {
		x := writeSeen{m: c.meta, scope: scope, prev: &w.shadow[scope], after: *rec, kind: kind, expect: expect, now: c.meta.now}
		if kind == core.WriteDelete {
			x.after = core.Record{Scope: rec.Scope}
		}
		if ev != nil {
			x.ev = *ev
		}
		w.check.life.written(&x)
		c.meta.heard(&x.after, ev)
	}
	w.applied(c.meta, rec, kind, expect.ExpectToken)
}

// calling hears a call of c's caller about scope: for a reconciler with a
// rejected finding about it, the call that reschedules it.
func (c callerStore) calling(scope core.Scope) {
	if wk := c.meta.worker; wk != nil && len(wk.refused) > 0 {
		if i, ok := c.s.w.scopeIndex(scope); ok {
			c.s.w.check.rescheduled(wk, i)
		}
	}
}

// client is the history's client number of the caller m.
func (w *world) client(m *opMeta) int {
	switch m.actor {
	case ActorReconciler:
		return len(w.servers)
	case ActorSweeper:
		return len(w.servers) + 1
	case ActorOperator:
		return len(w.servers) + 2
	}
	return int(m.actorID)
}

// history records a store call for -lincheck: made now by m, answered when
// m hears back.
func (w *world) history(m *opMeta, op linearizability.StoreOperation) {
	if !w.cfg.LinCheck || w.fastPath && op.Kind == store.MethodLoad {
		// On the fast path's seeds the writes are Applies, in the
		// lifecycle history: a Load (an operator's), alone in the
		// store's, would be held to a store nobody wrote.
		return
	}
	op.Client = w.client(m)
	op.Call, op.Return = w.now, max(m.returnAt, w.now)
	if op.Kind == store.MethodInsert || op.Kind == store.MethodCompareAndSet {
		op.Record.Response = op.Record.Response.Clone()
	}
	w.lin = append(w.lin, op)
}

// lifeHistory records an Apply for -lincheck, on the seeds that use the
// fast path: one event applied atomically, checked against the lifecycle
// model (core.Step as the specification).
func (w *world) lifeHistory(m *opMeta, op linearizability.LifecycleOperation) {
	if !w.cfg.LinCheck {
		return
	}
	op.Client = w.client(m)
	op.Call, op.Return = w.now, max(m.returnAt, w.now)
	op.Event.Response = op.Event.Response.Clone()
	op.Record.Response = op.Record.Response.Clone()
	w.linLife = append(w.linLife, op)
}

// storeLatency is one store call's round trip.
func (w *world) storeLatency() int64 {
	d := between(w.rng.store, w.cfg.StoreLatencyMin, w.cfg.StoreLatencyMax)
	if w.fault(FaultStoreLatency, w.rng.store) {
		d *= 20
	}
	return d
}
