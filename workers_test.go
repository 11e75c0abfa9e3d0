package idem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// unknownKey leaves req's key unknown: its action timed out.
func (f *fixture) unknownKey(t *testing.T, req idem.Request) {
	t.Helper()
	_, err := f.ex.Do(context.Background(), req, func(context.Context, idem.Attempt) (idem.Response, error) {
		return idem.Response{}, context.DeadlineExceeded
	})
	if !errors.Is(err, idem.ErrOutcomeUnknown) {
		t.Fatal(err)
	}
}

func TestReconcilerSettlesUnknowns(t *testing.T) {
	for _, c := range []struct {
		finding idem.Finding
		want    core.Status
		reruns  bool
	}{
		{idem.Finding{Verdict: core.VerdictExecuted, Response: created}, core.StatusCompleted, false},
		{idem.Finding{Verdict: core.VerdictNotExecuted}, core.StatusFailedRetryable, true},
	} {
		t.Run(c.finding.Verdict.String(), func(t *testing.T) {
			f := newFixture(t, nil)
			req := request(key1, payload)
			f.unknownKey(t, req)
			var checked []idem.Record
			rec := f.reconciler(t, func(_ context.Context, r idem.Record) (idem.Finding, error) {
				checked = append(checked, r)
				return c.finding, nil
			})
			n, err := rec.RunOnce(context.Background())
			if err != nil || n != 1 || len(checked) != 1 || checked[0].Scope != req.Scope {
				t.Fatalf("settled %d, checked %d, %v", n, len(checked), err)
			}
			if st := f.status(t, req); st != c.want {
				t.Fatalf("status %v", st)
			}
			r, err := f.ex.Do(context.Background(), req, f.act(created, nil))
			if err != nil || !r.Response.Equal(created) || (f.ran.Load() == 1) != c.reruns {
				t.Fatalf("after reconciling: %+v %v (ran %d)", r, err, f.ran.Load())
			}
			if f.metrics.Total(idem.CounterReconcileResolved) != 1 {
				t.Fatal("reconcile.resolved not counted")
			}
		})
	}
}

func TestReconcilerBacksOffThenGivesUp(t *testing.T) {
	f := newFixture(t, func(p *idem.Policy) {
		p.ReconcileBackoffBase = time.Second
		p.ReconcileBackoffMax = 4 * time.Second
		p.ReconcileAttemptsMax = 4
	})
	req := request(key1, payload)
	f.unknownKey(t, req)
	checks := 0
	rec := f.reconciler(t, func(context.Context, idem.Record) (idem.Finding, error) {
		checks++
		if checks%2 == 0 {
			return idem.Finding{}, errors.New("ledger unreachable") // counts as still unknown
		}
		return idem.Finding{Verdict: core.VerdictStillUnknown}, nil
	})
	ctx := context.Background()
	// Backoffs 1s, 2s, 4s (capped): the record is due only when they pass.
	for i, wait := range []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second} {
		if wait > 0 {
			f.clock.Advance(wait - time.Millisecond)
			if _, err := rec.RunOnce(ctx); err != nil || checks != i {
				t.Fatalf("look %d came before its backoff (checks %d, %v)", i, checks, err)
			}
			f.clock.Advance(time.Millisecond)
		}
		if _, err := rec.RunOnce(ctx); err != nil || checks != i+1 {
			t.Fatalf("look %d: checks %d, %v", i, checks, err)
		}
	}
	f.clock.Advance(time.Hour)
	if _, err := rec.RunOnce(ctx); err != nil || checks != 4 {
		t.Fatalf("looked again after giving up: %d %v", checks, err)
	}
	if st := f.status(t, req); st != core.StatusUnknown {
		t.Fatalf("status %v", st)
	}
	if f.metrics.Total(idem.CounterReconcileFailed) != 1 {
		t.Fatal("reconcile.failed not counted")
	}
}

func TestSweeperExpiresAndPrunes(t *testing.T) {
	for _, mode := range []core.ExpiryMode{core.ExpirySoft, core.ExpiryHard} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newFixture(t, func(p *idem.Policy) { p.Expiry = mode })
			ctx := context.Background()
			req := request(key1, payload)
			if _, err := f.ex.Do(ctx, req, f.act(created, nil)); err != nil {
				t.Fatal(err)
			}
			sw := f.sweeper(t)
			f.clock.Advance(f.ex.Policy().TTL - time.Second)
			if n, err := sw.RunOnce(ctx); n != 0 || err != nil {
				t.Fatalf("swept %d before the TTL: %v", n, err)
			}
			f.clock.Advance(time.Second)
			if n, err := sw.RunOnce(ctx); n != 1 || err != nil {
				t.Fatalf("swept %d at the TTL: %v", n, err)
			}
			want := core.StatusExpired
			if mode == core.ExpiryHard {
				want = core.StatusAbsent
			}
			if st := f.status(t, req); st != want {
				t.Fatalf("status %v", st)
			}
			if f.metrics.Total(idem.CounterTTLPruned) != 1 {
				t.Fatal("ttl_pruned not counted")
			}
			// The key is free again, even for another payload.
			if r, err := f.ex.Do(ctx, request(key1, other), f.act(created, nil)); err != nil || r.Kind != idem.ResultExecuted {
				t.Fatalf("after expiry: %+v %v", r, err)
			}
		})
	}
}

func TestSweeperTurnsZombiesUnknown(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	req := request(key1, payload)
	call, err := f.ex.Begin(req)
	if err != nil {
		t.Fatal(err)
	}
	var a store.Applied
	err = store.Apply(ctx, f.store, req.Scope, call.Next().Event, ptr(f.ex.Policy()), &a)
	call.Applied(&a, err) // then the process dies
	sw := f.sweeper(t)
	f.clock.Advance(f.ex.Policy().LeaseDuration)
	if n, err := sw.RunOnce(ctx); n != 1 || err != nil {
		t.Fatalf("%d %v", n, err)
	}
	if st := f.status(t, req); st != core.StatusUnknown {
		t.Fatalf("status %v", st)
	}
	if f.metrics.Total(idem.CounterZombieKey) != 1 || f.metrics.Total(idem.CounterReconcileScheduled) != 1 {
		t.Fatal("zombie not counted")
	}
	// TTL never touches an unknown record.
	f.clock.Advance(10 * core.TTLMax)
	if n, _ := sw.RunOnce(ctx); n != 0 || f.status(t, req) != core.StatusUnknown {
		t.Fatal("an unknown record was swept")
	}
}

func TestSweeperAndReconcilerReportStoreErrors(t *testing.T) {
	f := newFixture(t, nil)
	f.unknownKey(t, request(key1, payload))
	f.store.failLoad.Store(true)
	rec := f.reconciler(t, func(context.Context, idem.Record) (idem.Finding, error) {
		return idem.Finding{Verdict: core.VerdictExecuted, Response: created}, nil
	})
	var se *store.Error
	if _, err := rec.RunOnce(context.Background()); !errors.As(err, &se) {
		t.Fatalf("%v", err)
	}
	if r, err := f.ex.Reconciler(nil); err == nil || r != nil {
		t.Fatal("a reconciler without a check was built")
	}
}

func ptr[T any](v T) *T { return &v }

func TestWorkersRunUntilCancelled(t *testing.T) {
	f := newFixture(t, nil)
	req := request(key1, payload)
	f.unknownKey(t, req)
	ctx, cancel := context.WithCancel(context.Background())
	rec := f.reconciler(t, func(context.Context, idem.Record) (idem.Finding, error) {
		return idem.Finding{Verdict: core.VerdictExecuted, Response: created}, nil
	})
	done := make(chan error, 2)
	go func() { done <- rec.Run(ctx, 5*time.Millisecond) }()
	sw := f.sweeper(t)
	go func() { done <- sw.Run(ctx, 5*time.Millisecond) }()
	deadline := time.Now().Add(5 * time.Second)
	for f.status(t, req) != core.StatusCompleted {
		if time.Now().After(deadline) {
			t.Fatal("the reconciler's loop never settled the record")
		}
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	for range 2 {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v", err)
		}
	}
	if err := f.sweeper(t).Run(context.Background(), 0); err == nil {
		t.Fatal("a zero interval was accepted")
	}
}

func (f *fixture) reconciler(t *testing.T, check idem.Check, opts ...idem.WorkerOption) *idem.Reconciler {
	t.Helper()
	r, err := f.ex.Reconciler(check, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) sweeper(t *testing.T, opts ...idem.WorkerOption) *idem.Sweeper {
	t.Helper()
	s, err := f.ex.Sweeper(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestWorkersReportErrors: a zero worker refuses to run instead of doing
// nothing for ever; a failed run is counted in worker.error and handed to
// the error handler; bad options are refused when the worker is built.
func TestWorkersReportErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := (&idem.Sweeper{}).RunOnce(ctx); err == nil {
		t.Fatal("a zero Sweeper ran")
	}
	if err := (&idem.Reconciler{}).Run(ctx, time.Millisecond); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("a zero Reconciler ran: %v", err)
	}
	f := newFixture(t, nil)
	for _, bad := range []idem.WorkerOption{idem.WithBatchSize(0), idem.WithErrorHandler(nil), idem.WithLogger(nil)} {
		if _, err := f.ex.Sweeper(bad); err == nil {
			t.Fatal("a bad option was accepted")
		}
	}
	f.store.failLoad.Store(true)
	f.unknownKeyWith(t) // needs a due record: made before the store fails
	errs := make(chan error, 16)
	rctx, cancel := context.WithCancel(ctx)
	rec := f.reconciler(t, func(context.Context, idem.Record) (idem.Finding, error) {
		return idem.Finding{Verdict: core.VerdictExecuted, Response: created}, nil
	}, idem.WithErrorHandler(func(err error) {
		select {
		case errs <- err:
		default:
		}
	}))
	done := make(chan error, 1)
	go func() { done <- rec.Run(rctx, time.Millisecond) }()
	var se *store.Error
	if err := <-errs; !errors.As(err, &se) || se.Method != store.MethodLoad {
		t.Fatalf("handler got %v", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if f.metrics.Total(idem.CounterWorkerError) == 0 {
		t.Fatal("worker.error not counted")
	}
}

// unknownKeyWith leaves a key unknown through the memory store itself, so
// that it is due whatever the flaky store's switches say.
func (f *fixture) unknownKeyWith(t *testing.T) {
	t.Helper()
	p := f.ex.Policy()
	var a store.Applied
	req := request(key1, payload)
	if err := store.Apply(context.Background(), f.mem, req.Scope, core.Event{Kind: core.EventReserve, Fingerprint: payload}, &p, &a); err != nil {
		t.Fatal(err)
	}
	if err := store.Apply(context.Background(), f.mem, req.Scope, core.Event{Kind: core.EventMarkUnknown, Token: a.Record.Token}, &p, &a); err != nil {
		t.Fatal(err)
	}
}
