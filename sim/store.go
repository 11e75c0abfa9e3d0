package sim

import (
	"context"
	"errors"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	"github.com/idemkit/idem/store"
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
// store.Applier, so every event goes through load and compare-and-set, where
// races and faults can fall between the two.
type faultyStore struct {
	w     *world
	inner *memstore.Store
}

var _ store.Store = (*faultyStore)(nil)

func (s *faultyStore) failBefore() bool { return s.w.fault(FaultStoreErrorBefore, s.w.rng.store) }

func (s *faultyStore) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	if s.failBefore() {
		if s.w.cfg.LinCheck {
			s.w.history(linearizability.StoreOperation{Kind: linearizability.StoreLoad, Scope: scope, Outcome: linearizability.OutcomeFailed})
		}
		return store.Snapshot{}, errStoreDown
	}
	snap, err := s.inner.Load(ctx, scope)
	if err == nil && s.w.cfg.LinCheck {
		s.w.history(linearizability.StoreOperation{Kind: linearizability.StoreLoad, Scope: scope, Record: snap.Record, FreshToken: snap.FreshToken, Outcome: linearizability.OutcomeOK})
	}
	return snap, err
}

// write makes the write of kind (rec is the record written, or for a delete
// just its scope) and reports it to the checkers; then it may pretend the
// write failed.
func (s *faultyStore) write(ctx context.Context, kind core.WriteKind, rec *core.Record, v uint64, t core.Token) error {
	if s.failBefore() {
		s.record(kind, rec, v, t, linearizability.OutcomeFailed)
		return errStoreDown
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
		s.record(kind, rec, v, t, linearizability.OutcomeConflict)
		return err
	}
	s.w.applied(rec, kind, t)
	if s.w.fault(FaultStoreErrorAfter, s.w.rng.store) {
		s.w.log(Event{Scope: s.w.cur.scope, Actor: ActorStore, What: WhatFaultAfter, Token: rec.Token})
		s.record(kind, rec, v, t, linearizability.OutcomeUnknown) // the caller cannot tell it applied
		return errStoreDown
	}
	s.record(kind, rec, v, t, linearizability.OutcomeOK)
	return nil
}

// record adds a write to the history, for -lincheck only: the operation is
// large, and most runs do not check it.
func (s *faultyStore) record(kind core.WriteKind, rec *core.Record, v uint64, t core.Token, outcome linearizability.Outcome) {
	if !s.w.cfg.LinCheck {
		return
	}
	op := linearizability.StoreOperation{Scope: rec.Scope, ExpectVersion: v, ExpectToken: t, Outcome: outcome}
	switch kind {
	case core.WriteInsert:
		op.Kind, op.Record, op.ExpectVersion, op.ExpectToken = linearizability.StoreInsert, *rec, 0, 0
	case core.WriteUpdate:
		op.Kind, op.Record = linearizability.StoreCompareAndSet, *rec
	case core.WriteDelete:
		op.Kind = linearizability.StoreDelete
	}
	s.w.history(op)
}

func (s *faultyStore) Insert(ctx context.Context, rec *core.Record) error {
	return s.write(ctx, core.WriteInsert, rec, 0, 0)
}

func (s *faultyStore) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, t core.Token) error {
	return s.write(ctx, core.WriteUpdate, rec, v, t)
}

func (s *faultyStore) Delete(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	return s.write(ctx, core.WriteDelete, &core.Record{Scope: scope}, v, t)
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

func (s *faultyStore) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	if s.failBefore() {
		return nil, errStoreDown
	}
	return s.inner.Due(ctx, kind, limit)
}

// Wait is never called by the simulator, which wakes waiters itself when it
// sees a write; it is here to satisfy store.Store.
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
