package linearizability

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Recorder wraps a store.Store and records the history of what its clients
// do: every Load, Insert, CompareAndSet and Delete as a StoreOperation, and
// every event applied through store.Apply (or an executor) as a
// LifecycleOperation. Each client gets its own view (Client), so that the
// visualization shows one row per client. It is safe for concurrent use.
type Recorder struct {
	inner   store.Store
	applier store.Applier     // inner's fast path, or nil
	held    store.HeldApplier // inner's held fast path, or nil
	now     func() int64

	mu    sync.Mutex
	store []StoreOperation
	life  []LifecycleOperation
}

// NewRecorder records the history of s. now gives the timestamps, in
// nanoseconds, and must never go back; nil means the monotonic time since
// NewRecorder.
func NewRecorder(s store.Store, now func() int64) *Recorder {
	if now == nil {
		start := time.Now()
		now = func() int64 { return int64(time.Since(start)) }
	}
	r := &Recorder{inner: s, now: now}
	r.applier, _ = s.(store.Applier)
	r.held, _ = s.(store.HeldApplier)
	return r
}

// Client is the view of the store for client id (from 0). It is a
// store.Store and always a store.Applier: store.Apply and executors over it
// record one LifecycleOperation per event. When the recorded store is an
// Applier its Apply is used; otherwise the view loads, steps and writes by
// the core's contract (store.Op) and records those store calls as well.
func (r *Recorder) Client(id int) *RecordingStore { return &RecordingStore{r: r, client: id} }

// StoreHistory is a copy of the store operations recorded so far.
func (r *Recorder) StoreHistory() []StoreOperation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]StoreOperation(nil), r.store...)
}

// LifecycleHistory is a copy of the lifecycle operations recorded so far.
func (r *Recorder) LifecycleHistory() []LifecycleOperation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]LifecycleOperation(nil), r.life...)
}

func (r *Recorder) addStore(op StoreOperation) {
	r.mu.Lock()
	r.store = append(r.store, op)
	r.mu.Unlock()
}

func (r *Recorder) addLife(op LifecycleOperation) {
	r.mu.Lock()
	r.life = append(r.life, op)
	r.mu.Unlock()
}

// RecordingStore is one client's view of a Recorder's store.
type RecordingStore struct {
	r      *Recorder
	client int
}

var (
	_ store.Store       = (*RecordingStore)(nil)
	_ store.Applier     = (*RecordingStore)(nil)
	_ store.HeldApplier = (*RecordingStore)(nil)
)

// EndingOf classifies a write's error: nil applied, ErrConflict did
// not, anything else may have.
func EndingOf(err error) Ending {
	switch {
	case err == nil:
		return EndedOK
	case errors.Is(err, store.ErrConflict):
		return EndedConflict
	}
	return EndedIndeterminate
}

// Load implements store.Store.
func (c *RecordingStore) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	op := StoreOperation{Client: c.client, Kind: store.MethodLoad, Scope: scope, Call: c.r.now()}
	snap, err := c.r.inner.Load(ctx, scope)
	op.Return = c.r.now()
	if err != nil {
		op.Ended = EndedFailed
	} else {
		op.Ended, op.Record, op.FreshToken = EndedOK, snap.Record, snap.FreshToken
	}
	c.r.addStore(op)
	return snap, err
}

// Insert implements store.Store.
func (c *RecordingStore) Insert(ctx context.Context, rec *core.Record) error {
	op := StoreOperation{Client: c.client, Kind: store.MethodInsert, Scope: rec.Scope, Record: *rec}
	op.Record.Response = rec.Response.Clone()
	op.Call = c.r.now()
	err := c.r.inner.Insert(ctx, rec)
	op.Return = c.r.now()
	op.Ended = EndingOf(err)
	c.r.addStore(op)
	return err
}

// CompareAndSet implements store.Store.
func (c *RecordingStore) CompareAndSet(ctx context.Context, rec *core.Record, expectVersion uint64, expectToken core.Token) error {
	op := StoreOperation{Client: c.client, Kind: store.MethodCompareAndSet, Scope: rec.Scope, Record: *rec, ExpectVersion: expectVersion, ExpectToken: expectToken}
	op.Record.Response = rec.Response.Clone()
	op.Call = c.r.now()
	err := c.r.inner.CompareAndSet(ctx, rec, expectVersion, expectToken)
	op.Return = c.r.now()
	op.Ended = EndingOf(err)
	c.r.addStore(op)
	return err
}

// Delete implements store.Store.
func (c *RecordingStore) Delete(ctx context.Context, scope core.Scope, expectVersion uint64, expectToken core.Token) error {
	op := StoreOperation{Client: c.client, Kind: store.MethodDelete, Scope: scope, ExpectVersion: expectVersion, ExpectToken: expectToken}
	op.Call = c.r.now()
	err := c.r.inner.Delete(ctx, scope, expectVersion, expectToken)
	op.Return = c.r.now()
	op.Ended = EndingOf(err)
	c.r.addStore(op)
	return err
}

// Due implements store.Store; it is not recorded (a hint, not a read the
// model checks).
func (c *RecordingStore) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	return c.r.inner.Due(ctx, kind, limit)
}

// Wait implements store.Store; it is not recorded (it may return spuriously).
func (c *RecordingStore) Wait(ctx context.Context, scope core.Scope, version uint64, token core.Token) error {
	return c.r.inner.Wait(ctx, scope, version, token)
}

// Apply implements store.Applier and records one LifecycleOperation.
//
// A RecordingStore is an Applier whatever it records, so it is not built
// with store.Wrap (whose result is an Applier only when the inner store is):
// store.Apply and executors must come through here for every event, or no
// lifecycle operation would be recorded over a store without a fast path.
// Over an Applier, the inner Apply runs as it is (its store calls are not
// seen); otherwise the event goes through load-step-write (store.Op) over
// this view, so that each store call is recorded as well. To check a store
// with its fast path hidden, record store.HideApplier(s).
func (c *RecordingStore) Apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, a *store.Applied) error {
	op := LifecycleOperation{Client: c.client, Scope: scope, Event: ev}
	op.Event.Response = ev.Response.Clone()
	op.Call = c.r.now()
	var err error
	if c.r.applier != nil {
		err = c.r.applier.Apply(ctx, scope, ev, p, a)
		op.Return = c.r.now()
		op.SetApplied(ev, a, err)
	} else {
		err = c.applyLoop(ctx, &op, ev, p, a)
	}
	c.r.addLife(op)
	return err
}

// ApplyHeld implements store.HeldApplier and records one LifecycleOperation,
// as Apply does: over a store that is a HeldApplier, its ApplyHeld runs (so
// that a driver's held path is exercised and checked, not hidden behind
// Apply); otherwise the event is applied as Apply would.
func (c *RecordingStore) ApplyHeld(ctx context.Context, held *core.Record, ev core.Event, p *core.Policy, a *store.Applied) error {
	if c.r.held == nil {
		return c.Apply(ctx, held.Scope, ev, p, a)
	}
	op := LifecycleOperation{Client: c.client, Scope: held.Scope, Event: ev}
	op.Event.Response = ev.Response.Clone()
	op.Call = c.r.now()
	err := c.r.held.ApplyHeld(ctx, held, ev, p, a)
	op.Return = c.r.now()
	op.SetApplied(ev, a, err)
	c.r.addLife(op)
	return err
}

// SetApplied fills op from how an Apply of ev ended: what it did (a), or
// its error err (the core's refusal: nothing written; any other: the
// effect is unknown). A host that records Applies itself (the simulator)
// builds its operations with it, as the Recorder does.
func (op *LifecycleOperation) SetApplied(ev core.Event, a *store.Applied, err error) {
	switch {
	case err == nil:
		op.Ended = EndedOK
		op.Event.Now = a.Now
		if ev.Kind == core.EventReserve {
			op.Event.Token = 0
			if a.Transition.Decision.Kind == core.DecisionExecute {
				op.Event.Token = a.Transition.Decision.Token
			}
		}
		op.Before, op.Transition, op.Record = a.Before, a.Transition, a.Record
	case core.Refused(err): // bad input, or a record or token the driver should not have handed it
		op.Ended = EndedFailed // the core refused: nothing was written
	default:
		op.Ended = EndedIndeterminate
	}
}

// applyLoop applies ev by load-step-write over c, recording each store call,
// and fills op from how the loop ended.
func (c *RecordingStore) applyLoop(ctx context.Context, op *LifecycleOperation, ev core.Event, p *core.Policy, a *store.Applied) error {
	obs := &observer{RecordingStore: c}
	o := store.NewOp(op.Scope, ev, p)
	for !o.Done() {
		o.Do(ctx, obs)
	}
	applied, err := o.Applied()
	*a = *applied
	op.Return = c.r.now()
	switch {
	case err == nil:
		op.Ended = EndedOK
		op.Before, op.Transition, op.Record = a.Before, a.Transition, a.Record
	case obs.lastLoad || obs.lastErr == nil || errors.Is(obs.lastErr, store.ErrConflict):
		// The last call was a load (it failed, or the core refused what it
		// read), or every write lost its race: nothing was written.
		op.Ended = EndedFailed
	default:
		op.Ended = EndedIndeterminate
		op.WriteKnown = true
		op.Transition, op.Record = a.Transition, a.Record
	}
	if op.Ended != EndedFailed {
		op.Event.Now = a.Now
		if ev.Kind == core.EventReserve {
			op.Event.Token = obs.fresh
		}
	}
	return err
}

// observer sees the store calls of one store.Op: the fresh token of its last
// load, and how its last call ended.
type observer struct {
	*RecordingStore
	fresh    core.Token
	lastLoad bool
	lastErr  error
}

func (o *observer) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	snap, err := o.RecordingStore.Load(ctx, scope)
	o.lastLoad, o.lastErr = true, err
	if err == nil {
		o.fresh = snap.FreshToken
	}
	return snap, err
}

func (o *observer) Insert(ctx context.Context, rec *core.Record) error {
	err := o.RecordingStore.Insert(ctx, rec)
	o.lastLoad, o.lastErr = false, err
	return err
}

func (o *observer) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, t core.Token) error {
	err := o.RecordingStore.CompareAndSet(ctx, rec, v, t)
	o.lastLoad, o.lastErr = false, err
	return err
}

func (o *observer) Delete(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	err := o.RecordingStore.Delete(ctx, scope, v, t)
	o.lastLoad, o.lastErr = false, err
	return err
}
