package sim

import (
	"context"
	"errors"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// LiveStore is a store a live run can keep its world in, in place of the
// memory store (RunLiveOn): a durable driver over a real server. It must
// be a store.Applier, as the memory store is, since the simulator's store
// faults wrap a fast path too.
type LiveStore interface {
	store.Store
	store.Applier
}

// OpenLiveStore opens a fresh, empty LiveStore for the seed's run, and the
// function that closes it (and removes what the run wrote).
type OpenLiveStore func(seed uint64) (LiveStore, func(), error)

// probeScope is the scope whose Load reads the store's clock: it is never
// written, so it stays absent.
var probeScope = core.Scope{Principal: "simrun-clock-probe", UseCase: "sim.clock", Key: "clock-probe-000000"}

// shiftedStore shows a store that keeps its own clock (a server's TIME) on
// the world's clock: every time it returns is moved back by delta, and
// every time it is given forward, so that the world, its checkers and its
// workload see one clock. delta is measured once, from the middle of a
// Load (so it is off by at most half a round trip, which the live
// checkers' tolerance covers: they are never exact on real time).
type shiftedStore struct {
	inner LiveStore
	delta time.Duration // the store's time minus the world's
}

// newShiftedStore measures inner's clock against now.
func newShiftedStore(inner LiveStore, now func() time.Time) (*shiftedStore, error) {
	best := time.Duration(1<<63 - 1)
	var delta time.Duration
	for range 5 { // the shortest round trip bounds the error best
		sent := now()
		snap, err := inner.Load(context.Background(), probeScope)
		back := now()
		if err != nil {
			return nil, err
		}
		if snap.Record.Exists() {
			return nil, errors.New("sim: the live store is not empty (its clock probe has a record)")
		}
		if rtt := back.Sub(sent); rtt < best {
			best, delta = rtt, snap.Now.Sub(sent.Add(rtt/2))
		}
	}
	return &shiftedStore{inner: inner, delta: delta}, nil
}

func (s *shiftedStore) out(t time.Time) time.Time { return shift(t, -s.delta) }
func (s *shiftedStore) in(t time.Time) time.Time  { return shift(t, s.delta) }

// shift moves t by d; the zero time (no time) stays zero.
func shift(t time.Time, d time.Duration) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(d)
}

// record moves rec's times with by.
func shiftRecord(rec *core.Record, by func(time.Time) time.Time) {
	for _, t := range []*time.Time{&rec.LockedUntil, &rec.ReconcileAfter, &rec.CreatedAt, &rec.CompletedAt, &rec.ExpiresAt} {
		*t = by(*t)
	}
}

func (s *shiftedStore) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	snap, err := s.inner.Load(ctx, scope)
	snap.Now = s.out(snap.Now)
	shiftRecord(&snap.Record, s.out)
	return snap, err
}

func (s *shiftedStore) Insert(ctx context.Context, rec *core.Record) error {
	r := *rec
	shiftRecord(&r, s.in)
	return s.inner.Insert(ctx, &r)
}

func (s *shiftedStore) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, t core.Token) error {
	r := *rec
	shiftRecord(&r, s.in)
	return s.inner.CompareAndSet(ctx, &r, v, t)
}

func (s *shiftedStore) Delete(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	return s.inner.Delete(ctx, scope, v, t)
}

func (s *shiftedStore) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	recs, err := s.inner.Due(ctx, kind, limit)
	for i := range recs {
		shiftRecord(&recs[i], s.out)
	}
	return recs, err
}

func (s *shiftedStore) Wait(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	return s.inner.Wait(ctx, scope, v, t)
}

func (s *shiftedStore) Apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
	ev.Now = s.in(ev.Now)
	err := s.inner.Apply(ctx, scope, ev, p, out)
	out.Now = s.out(out.Now)
	shiftRecord(&out.Record, s.out)
	return err
}
