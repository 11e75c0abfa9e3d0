package sim

import (
	"context"
	"errors"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	memstore "github.com/idemkit/idem/store/mem"
)

var errStoreDown = errors.New("sim: store unavailable (injected)")

// opMeta says who is behind a store call, for the checkers: the actor, the
// event it applies, and the attempt's own token (which a broken policy may
// not be the token it writes with).
type opMeta struct {
	actor   Actor
	actorID int32
	scope   int32
	event   core.EventKind
	attempt core.Token
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
		return idem.Snapshot{}, errStoreDown
	}
	return s.inner.Load(ctx, scope)
}

// write applies a write through apply and reports it to the checkers; then
// it may pretend the write failed.
func (s *faultyStore) write(rec *core.Record, kind core.WriteKind, expectToken core.Token, apply func() error) error {
	if s.failBefore() {
		return errStoreDown
	}
	if err := apply(); err != nil {
		return err
	}
	s.w.applied(rec, kind, expectToken)
	if s.w.fault(FaultStoreErrorAfter, s.w.rng.store) {
		s.w.log(Event{Scope: s.w.cur.scope, Actor: ActorStore, What: WhatFaultAfter, Token: rec.Token})
		return errStoreDown
	}
	return nil
}

func (s *faultyStore) Insert(ctx context.Context, rec *core.Record) error {
	return s.write(rec, core.WriteInsert, 0, func() error { return s.inner.Insert(ctx, rec) })
}

func (s *faultyStore) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, t core.Token) error {
	return s.write(rec, core.WriteUpdate, t, func() error { return s.inner.CompareAndSet(ctx, rec, v, t) })
}

func (s *faultyStore) Delete(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	gone := core.Record{Scope: scope}
	return s.write(&gone, core.WriteDelete, t, func() error { return s.inner.Delete(ctx, scope, v, t) })
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
