package sim

import (
	"context"
	"errors"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	memstore "github.com/idemkit/idem/store/mem"
)

var errStoreDown = errors.New("sim: store unavailable (injected)")

// opMeta says who is behind a store call, for the checkers: the actor, the
// event it applies, and the attempt's own token (which a broken policy may
// not be the token it writes with).
type opMeta struct {
	actor    Actor
	actorID  int32
	scope    int32
	event    core.EventKind
	attempt  core.Token
	returnAt int64 // when the caller hears back, for the linearizability history
}

// faultyStore puts the real memory store behind the store faults of SPEC §8:
// errors before a call applies, errors after a write applied (an ambiguous
// commit), and latency (which the world adds around each call). It is not an
// idem.Applier, so every event goes through load and compare-and-set, where
// races and faults can fall between the two.
type faultyStore struct {
	w     *world
	inner *memstore.Store
}

var _ idem.Store = (*faultyStore)(nil)

func (s *faultyStore) failBefore() bool { return s.w.fault(FaultStoreErrorBefore, s.w.rng.store) }

func (s *faultyStore) Load(ctx context.Context, scope core.Scope) (idem.Snapshot, error) {
	if s.failBefore() {
		s.w.history(linearizability.StoreOperation{Kind: linearizability.StoreLoad, Scope: scope, Outcome: linearizability.OutcomeFailed})
		return idem.Snapshot{}, errStoreDown
	}
	snap, err := s.inner.Load(ctx, scope)
	if err == nil {
		s.w.history(linearizability.StoreOperation{Kind: linearizability.StoreLoad, Scope: scope, Record: snap.Record, FreshToken: snap.FreshToken, Outcome: linearizability.OutcomeOK})
	}
	return snap, err
}

// write applies a write through apply and reports it to the checkers; then
// it may pretend the write failed.
func (s *faultyStore) write(op linearizability.StoreOperation, rec *core.Record, kind core.WriteKind, apply func() error) error {
	if s.failBefore() {
		op.Outcome = linearizability.OutcomeFailed
		s.w.history(op)
		return errStoreDown
	}
	if err := apply(); err != nil {
		op.Outcome = linearizability.OutcomeConflict
		s.w.history(op)
		return err
	}
	s.w.applied(rec, kind, op.ExpectToken)
	op.Outcome = linearizability.OutcomeOK
	if s.w.fault(FaultStoreErrorAfter, s.w.rng.store) {
		s.w.log(Event{Scope: s.w.cur.scope, Actor: ActorStore, What: WhatFaultAfter, Token: rec.Token})
		op.Outcome = linearizability.OutcomeUnknown // the caller cannot tell it applied
		s.w.history(op)
		return errStoreDown
	}
	s.w.history(op)
	return nil
}

func (s *faultyStore) Insert(ctx context.Context, rec *core.Record) error {
	op := linearizability.StoreOperation{Kind: linearizability.StoreInsert, Scope: rec.Scope, Record: *rec}
	return s.write(op, rec, core.WriteInsert, func() error { return s.inner.Insert(ctx, rec) })
}

func (s *faultyStore) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, t core.Token) error {
	op := linearizability.StoreOperation{Kind: linearizability.StoreCompareAndSet, Scope: rec.Scope, Record: *rec, ExpectVersion: v, ExpectToken: t}
	return s.write(op, rec, core.WriteUpdate, func() error { return s.inner.CompareAndSet(ctx, rec, v, t) })
}

func (s *faultyStore) Delete(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	gone := core.Record{Scope: scope}
	op := linearizability.StoreOperation{Kind: linearizability.StoreDelete, Scope: scope, ExpectVersion: v, ExpectToken: t}
	return s.write(op, &gone, core.WriteDelete, func() error { return s.inner.Delete(ctx, scope, v, t) })
}

// history records a store call for -lincheck: made now by the current
// caller, answered when that caller hears back.
func (w *world) history(op linearizability.StoreOperation) {
	if !w.cfg.LinCheck {
		return
	}
	m := &w.cur
	op.Client = int(m.actorID)
	switch m.actor {
	case ActorReconciler:
		op.Client = len(w.servers)
	case ActorSweeper:
		op.Client = len(w.servers) + 1
	}
	op.Call, op.Return = w.now, max(m.returnAt, w.now)
	if op.Kind == linearizability.StoreInsert || op.Kind == linearizability.StoreCompareAndSet {
		op.Record.Response = op.Record.Response.Clone()
	}
	w.lin = append(w.lin, op)
}

func (s *faultyStore) Due(ctx context.Context, kind idem.DueKind, limit int) ([]core.Record, error) {
	if s.failBefore() {
		return nil, errStoreDown
	}
	return s.inner.Due(ctx, kind, limit)
}

// Wait is never called by the simulator, which wakes waiters itself when it
// sees a write; it is here to satisfy idem.Store.
func (s *faultyStore) Wait(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	return s.inner.Wait(ctx, scope, v, t)
}

// storeLatency is one store call's round trip.
func (w *world) storeLatency() int64 {
	d := between(w.rng.store, w.cfg.StoreLatencyMin, w.cfg.StoreLatencyMax)
	if w.fault(FaultStoreLatency, w.rng.store) {
		d *= 20
	}
	return d
}

var _ = time.Second
