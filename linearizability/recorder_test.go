package linearizability

import (
	"context"
	"errors"
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// failAfter applies the next write, then reports an error: an ambiguous commit.
type failAfter struct {
	store.Store
	armed bool
}

func (f *failAfter) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, t core.Token) error {
	err := f.Store.CompareAndSet(ctx, rec, v, t)
	if f.armed && err == nil {
		f.armed = false
		return errors.New("connection reset after commit")
	}
	return err
}

func TestRecorderClassifiesEndings(t *testing.T) {
	ctx := context.Background()
	f := &failAfter{Store: store.HideApplier(memstore.New(memstore.Options{}))}
	var clock int64
	rec := NewRecorder(f, func() int64 { clock += 10; return clock })
	c := rec.Client(3)
	snap, err := c.Load(ctx, scopeX)
	if err != nil {
		t.Fatal(err)
	}
	r1 := recordAt(scopeX, core.StatusInProgress, 1, snap.FreshToken)
	_ = c.Insert(ctx, &r1)
	_ = c.Insert(ctx, &r1)
	r2 := r1
	r2.Version = 2
	f.armed = true
	_ = c.CompareAndSet(ctx, &r2, 1, r1.Token)
	_ = c.Delete(ctx, scopeX, 1, r1.Token)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = c.Load(cancelled, scopeX)
	want := []struct {
		kind store.Method
		o    Ending
	}{{store.MethodLoad, EndedOK}, {store.MethodInsert, EndedOK}, {store.MethodInsert, EndedConflict}, {store.MethodCompareAndSet, EndedIndeterminate},
		{store.MethodDelete, EndedConflict}, {store.MethodLoad, EndedFailed}}
	h := rec.StoreHistory()
	if len(h) != len(want) {
		t.Fatalf("%d operations recorded, want %d", len(h), len(want))
	}
	for i, w := range want {
		if h[i].Kind != w.kind || h[i].Ended != w.o || h[i].Client != 3 || h[i].Return <= h[i].Call {
			t.Errorf("operation %d: %v %v client %d [%d, %d], want %v %v", i, h[i].Kind, h[i].Ended, h[i].Client, h[i].Call, h[i].Return, w.kind, w.o)
		}
	}
	if r := CheckStoreHistory(h, CheckOptions{NoVisualization: true}); !r.OK() {
		t.Fatal(r)
	}

	// Events through load-step-write: the fresh token and the store's time
	// are recorded; an ambiguous write is recorded with the write it was.
	p := core.PolicyDefault()
	a, err := applyOver(ctx, c, &p, scopeY, core.Event{Kind: core.EventReserve, Fingerprint: fpA})
	if err != nil {
		t.Fatal(err)
	}
	f.armed = true
	_, err = applyOver(ctx, c, &p, scopeY, core.Event{Kind: core.EventHeartbeat, Token: a.Transition.Decision.Token})
	if err == nil {
		t.Fatal("the ambiguous heartbeat succeeded")
	}
	life := rec.LifecycleHistory()
	if len(life) != 2 {
		t.Fatalf("%d lifecycle operations", len(life))
	}
	if op := life[0]; op.Ended != EndedOK || op.Event.Token != a.Transition.Decision.Token || !op.Event.Now.Equal(a.Now) || op.Before != core.StatusAbsent {
		t.Errorf("reserve recorded as %+v", op)
	}
	if op := life[1]; op.Ended != EndedIndeterminate || !op.WriteKnown || op.Transition.Write.Kind != core.WriteUpdate || op.Record.Version != 2 {
		t.Errorf("ambiguous heartbeat recorded as %+v", op)
	}
	if r := CheckLifecycleHistory(life, p, CheckOptions{NoVisualization: true}); !r.OK() {
		t.Fatal(r)
	}

	// Through an Applier, a reserve that does not execute has no known token.
	m := memstore.New(memstore.Options{})
	rec = NewRecorder(m, nil)
	for range 2 {
		if _, err := applyOver(ctx, rec.Client(0), &p, scopeX, core.Event{Kind: core.EventReserve, Fingerprint: fpA}); err != nil {
			t.Fatal(err)
		}
	}
	life = rec.LifecycleHistory()
	if life[0].Event.Token == 0 || life[1].Event.Token != 0 || life[1].Transition.Decision.Kind != core.DecisionInFlight || len(rec.StoreHistory()) != 0 {
		t.Errorf("through Apply: %+v", life)
	}
	if r := CheckLifecycleHistory(life, p, CheckOptions{NoVisualization: true}); !r.OK() {
		t.Fatal(r)
	}
}

// heldCounter counts the inner store's ApplyHeld calls.
type heldCounter struct {
	*memstore.Store
	n int
}

func (h *heldCounter) ApplyHeld(ctx context.Context, held *core.Record, ev core.Event, p *core.Policy, out *store.Applied) error {
	h.n++
	return h.Store.ApplyHeld(ctx, held, ev, p, out)
}

// TestRecorderPassesApplyHeld: over a HeldApplier, store.ApplyHeld through a
// client reaches the inner ApplyHeld and is recorded as one lifecycle
// operation; over a store without one, it is applied (and recorded) as
// Apply.
func TestRecorderPassesApplyHeld(t *testing.T) {
	ctx := context.Background()
	p := core.PolicyDefault()
	counter := &heldCounter{Store: memstore.New(memstore.Options{})}
	for _, c := range []struct {
		name  string
		inner store.Store
		want  int // inner ApplyHeld calls
	}{{"held applier", counter, 1}, {"plain store", store.HideApplier(memstore.New(memstore.Options{})), 0}} {
		before := counter.n
		rec := NewRecorder(c.inner, nil)
		cl := rec.Client(1)
		var a store.Applied
		if err := store.Apply(ctx, cl, scopeX, core.Event{Kind: core.EventReserve, Fingerprint: core.Fingerprint{1}}, &p, &a); err != nil {
			t.Fatal(err)
		}
		held := a.Record
		if err := store.ApplyHeld(ctx, cl, &held, core.Event{Kind: core.EventComplete, Token: held.Token, Response: core.Response{StatusCode: 200}}, &p, &a); err != nil {
			t.Fatal(err)
		}
		if got := counter.n - before; got != c.want {
			t.Errorf("%s: inner ApplyHeld called %d times, want %d", c.name, got, c.want)
		}
		life := rec.LifecycleHistory()
		if len(life) != 2 || life[1].Event.Kind != core.EventComplete || life[1].Ended != EndedOK ||
			life[1].Record.Status != core.StatusCompleted || life[1].Scope != scopeX || life[1].Client != 1 {
			t.Fatalf("%s: lifecycle history %+v, want the reserve then the completion", c.name, life)
		}
		if r := CheckLifecycleHistory(life, p, CheckOptions{}); !r.OK() {
			t.Errorf("%s: %s", c.name, r)
		}
	}
}
