package idem_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

const key2 = "550e8400-e29b-41d4-a716-446655440002"

// TestReconcilerGoesPastAnUnresolvableRecord (issue 10, defect 1): a finding
// the core refuses (executed without a response, or with a header that
// would inject another on replay) must not stop the batch: the other key is
// settled, the bad one is rescheduled with why, attempts counted.
func TestReconcilerGoesPastAnUnresolvableRecord(t *testing.T) {
	for _, bad := range []struct {
		name    string
		finding idem.Finding
		code    string
	}{
		{"executed without a response", idem.Finding{Verdict: core.VerdictExecuted}, "finding_invalid"},
		{"header injection", idem.Finding{Verdict: core.VerdictExecuted, Response: idem.Response{StatusCode: 201, Headers: []idem.Header{{Name: "X-A\r\nSet-Cookie", Value: "a=b"}}}}, "finding_invalid"},
		{"no verdict", idem.Finding{}, "finding_invalid"},
		{"check fails", idem.Finding{}, "check_failed"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			f := newFixture(t, nil)
			first, second := request(key1, payload), request(key2, payload)
			f.unknownKey(t, first) // the most overdue: listed first in every batch
			f.clock.Advance(time.Second)
			f.unknownKey(t, second)
			rec := f.reconciler(t, func(_ context.Context, r idem.Record) (idem.Finding, error) {
				if r.Scope == first.Scope {
					if bad.code == "check_failed" {
						return idem.Finding{}, errors.New("ledger down")
					}
					return bad.finding, nil
				}
				return idem.Finding{Verdict: core.VerdictExecuted, Response: created}, nil
			})
			n, err := rec.RunOnce(context.Background())
			if n != 1 || f.status(t, second) != core.StatusCompleted {
				t.Fatalf("settled %d (%v): the good record is %v", n, err, f.status(t, second))
			}
			snap, _ := f.mem.Load(context.Background(), first.Scope)
			r := snap.Record
			if r.Status != core.StatusUnknown || r.ReconcileAttempts != 1 || string(r.LastErrorCode) != bad.code || !r.ReconcileAfter.After(f.clock.Now()) {
				t.Fatalf("the bad record: %s", r.Describe())
			}
			if bad.code == "finding_invalid" && (err == nil || f.metrics.Total(idem.CounterWorkerError) == 0) {
				t.Fatalf("a refused finding went unreported: %v", err)
			}
			// Pushed back: the next batch does not ask about it again at once.
			if n, _ := rec.RunOnce(context.Background()); n != 0 {
				t.Fatalf("settled %d more", n)
			}
		})
	}
}

// TestEveryPathRefusesAnInjectedHeader (issue 10, defect 4): a response
// that HTTP cannot replay as stored is rejected on every path that stores
// one, not only the executor's own.
func TestEveryPathRefusesAnInjectedHeader(t *testing.T) {
	injected := idem.Response{StatusCode: 200, Headers: []idem.Header{{Name: "X-A\r\nSet-Cookie", Value: "a=b"}}}
	for _, r := range []idem.Response{injected, {StatusCode: 101}, {StatusCode: 204, Body: []byte("x")}, {StatusCode: 200, Headers: []idem.Header{{Name: "X-A", Value: "b\r\nSet-Cookie: c"}}}} {
		f := newFixture(t, nil)
		ctx := context.Background()
		// Through CompleteIn, inside the action.
		var inErr error
		_, err := f.ex.Do(ctx, request(key1, payload), func(ctx context.Context, a idem.Attempt) (idem.Response, error) {
			inErr = a.CompleteIn(ctx, f.mem, r)
			return r, nil
		})
		if !errors.Is(inErr, core.ErrResponseInvalid) || !errors.Is(err, idem.ErrResponseInvalid) {
			t.Fatalf("%s: CompleteIn %v, Do %v", r.Describe(), inErr, err)
		}
		if st := f.status(t, request(key1, payload)); st != core.StatusUnknown {
			t.Fatalf("%s: stored as %v", r.Describe(), st)
		}
	}
}

// TestNilActionIsRefusedBeforeAnythingIsWritten (defect 5).
func TestNilActionIsRefusedBeforeAnythingIsWritten(t *testing.T) {
	f := newFixture(t, nil)
	_, err := f.ex.Do(context.Background(), request(key1, payload), nil)
	if !errors.Is(err, idem.ErrInvalidRequest) || !strings.Contains(err.Error(), "nil action") {
		t.Fatalf("%v", err)
	}
	if st := f.status(t, request(key1, payload)); st != core.StatusAbsent {
		t.Fatalf("the key was written: %v", st)
	}
}

// TestClientGoneBeforeDoIsNoStoreOutage (defect 6): a context done before
// the reserve is the caller's, not the store's: its own error, no count.
func TestClientGoneBeforeDoIsNoStoreOutage(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.ex.Do(ctx, request(key1, payload), f.act(created, nil))
	if !errors.Is(err, context.Canceled) || errors.Is(err, idem.ErrStoreUnavailable) {
		t.Fatalf("%v", err)
	}
	if f.metrics.Total(idem.CounterStoreError) != 0 || f.ran.Load() != 0 {
		t.Fatal("counted as a store error, or ran")
	}
}

// TestNotExecutedButNotReleasedSaysSo (defect 7): the action proved it did
// nothing, but the Fail could not be written: the key is not free, and the
// error must not say it is.
func TestNotExecutedButNotReleasedSaysSo(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	_, err := f.ex.Do(ctx, request(key1, payload), func(context.Context, idem.Attempt) (idem.Response, error) {
		f.store.fail("write")
		return idem.Response{}, idem.NotExecuted(errors.New("card refused before sending"))
	})
	var e *idem.Error
	if !errors.As(err, &e) || e.Code == idem.CodeNotExecuted || e.Code != idem.CodeStoreUnavailable || e.RetryAfter <= 0 {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(err.Error(), "not executed") || !strings.Contains(err.Error(), "not released") {
		t.Fatalf("the message does not say what is true: %v", err)
	}
	if st := f.status(t, request(key1, payload)); st != core.StatusInProgress {
		t.Fatalf("status %v", st)
	}
}

// zeroClock is a store whose clock says the zero time.
type zeroClock struct{ store.Store }

func (z zeroClock) Load(ctx context.Context, s idem.Scope) (store.Snapshot, error) {
	snap, err := z.Store.Load(ctx, s)
	snap.Now = time.Time{}
	return snap, err
}

// TestZeroStoreClockIsAStoreError (defect 8).
func TestZeroStoreClockIsAStoreError(t *testing.T) {
	f := newFixture(t, nil)
	ex, err := idem.New(zeroClock{f.mem}, idem.WithMetrics(f.metrics))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ex.Do(context.Background(), request(key1, payload), f.act(created, nil))
	if !errors.Is(err, idem.ErrStoreUnavailable) || f.metrics.Total(idem.CounterStoreError) != 1 || f.ran.Load() != 0 {
		t.Fatalf("%v, store errors %d", err, f.metrics.Total(idem.CounterStoreError))
	}
}

// TestNotReleasedIsNotNotExecuted: a caller that asks errors.Is(err,
// ErrNotExecuted) to decide whether a retry may run at once is not misled.
func TestNotReleasedIsNotNotExecuted(t *testing.T) {
	f := newFixture(t, nil)
	_, err := f.ex.Do(context.Background(), request(key1, payload), func(context.Context, idem.Attempt) (idem.Response, error) {
		f.store.fail("write")
		return idem.Response{}, idem.NotExecuted(errors.New("refused"))
	})
	var ne *idem.NotExecutedError
	if errors.Is(err, idem.ErrNotExecuted) || !errors.Is(err, idem.ErrStoreUnavailable) || !errors.As(err, &ne) {
		t.Fatalf("%v", err)
	}
}

// TestPanicIsRecordedThenRaisedAgain (issue 10 §3): the key becomes unknown
// (never re-run), then the original value reaches the caller's recovery;
// http.ErrAbortHandler keeps its identity.
func TestPanicIsRecordedThenRaisedAgain(t *testing.T) {
	for _, value := range []any{"boom", http.ErrAbortHandler} {
		f := newFixture(t, nil)
		ctx := context.Background()
		got := func() (r any) {
			defer func() { r = recover() }()
			_, _ = f.ex.Do(ctx, request(key1, payload), func(context.Context, idem.Attempt) (idem.Response, error) { panic(value) })
			return nil
		}()
		if got != value {
			t.Fatalf("recovered %v, want %v", got, value)
		}
		if e, ok := got.(error); ok && !errors.Is(e, http.ErrAbortHandler) {
			t.Fatal("http.ErrAbortHandler lost its identity")
		}
		snap, _ := f.mem.Load(ctx, request(key1, payload).Scope)
		if snap.Record.Status != core.StatusUnknown || snap.Record.LastErrorCode != "action_panic" {
			t.Fatalf("not recorded: %s", snap.Record.Describe())
		}
		if _, err := f.ex.Do(ctx, request(key1, payload), f.act(created, nil)); !errors.Is(err, idem.ErrOutcomeUnknown) || f.ran.Load() != 0 {
			t.Fatalf("retry after a panic: %v", err)
		}
	}
}

// TestFlowKeepsPanicError: a host without a stack to unwind reports a
// panic as a *PanicError, and the key becomes unknown.
func TestFlowKeepsPanicError(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	p := f.ex.Policy()
	fl, err := f.ex.Begin(request(key1, payload))
	if err != nil {
		t.Fatal(err)
	}
	var a store.Applied
	for !fl.Done() {
		switch eff := fl.Next(); eff.Kind {
		case idem.EffectApply:
			err := store.Apply(ctx, f.mem, request(key1, payload).Scope, eff.Event, &p, &a)
			fl.Applied(&a, err)
		case idem.EffectRun:
			fl.Ran(idem.Response{}, &idem.PanicError{Value: "boom"})
		}
	}
	var pe *idem.PanicError
	if _, err := fl.Result(); !errors.Is(err, idem.ErrOutcomeUnknown) || !errors.As(err, &pe) {
		t.Fatalf("%v", err)
	}
	if st := f.status(t, request(key1, payload)); st != core.StatusUnknown {
		t.Fatalf("status %v", st)
	}
}

// TestLostLeaseCancelsTheAction (issue 10 §2): the action's context is
// cancelled, with ErrLeaseLost as its cause, as soon as the attempt loses
// its lease: when heartbeats stall (the store fails them until the lease
// ends), and when a heartbeat finds the record taken over.
func TestLostLeaseCancelsTheAction(t *testing.T) {
	for _, how := range []string{"heartbeats stall", "taken over"} {
		t.Run(how, func(t *testing.T) {
			f := newFixture(t, func(p *idem.Policy) { p.LeaseDuration = 300 * time.Millisecond })
			ex, err := idem.New(f.store, idem.WithPolicy(f.ex.Policy()), idem.WithMetrics(f.metrics), idem.WithHeartbeatInterval(20*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			sweeper, _ := ex.Sweeper()
			var cause error
			_, err = ex.Do(context.Background(), request(key1, payload), func(ctx context.Context, a idem.Attempt) (idem.Response, error) {
				f.store.fail("write") // no heartbeat extends the lease from now on
				if how == "taken over" {
					time.Sleep(50 * time.Millisecond)
					f.clock.Advance(time.Second) // past the lease, on the store's clock
					f.store.failWrite.Store(false)
					if n, err := sweeper.RunOnce(context.Background()); n != 1 || err != nil {
						return idem.Response{}, fmt.Errorf("sweep: %d %v", n, err)
					}
				}
				select {
				case <-ctx.Done():
					cause = context.Cause(ctx)
					return idem.Response{}, ctx.Err()
				case <-time.After(10 * time.Second):
					return created, nil
				}
			})
			if !errors.Is(cause, idem.ErrLeaseLost) {
				t.Fatalf("cause %v (Do: %v)", cause, err)
			}
			if !errors.Is(err, idem.ErrOutcomeUnknown) {
				t.Fatalf("Do: %v", err)
			}
		})
	}
}

// TestShortActionsDoNotBeat: an action that ends before a heartbeat
// interval costs no heartbeat at all.
func TestShortActionsDoNotBeat(t *testing.T) {
	counting := &countingStore{Store: memstore.New(memstore.Options{})}
	ex, err := idem.New(counting, idem.WithHeartbeatInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		key := fmt.Sprintf("550e8400-e29b-41d4-a716-%012d", i)
		if _, err := ex.Do(context.Background(), request(key, payload), func(context.Context, idem.Attempt) (idem.Response, error) { return created, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n := counting.heartbeats.Load(); n != 0 {
		t.Fatalf("%d heartbeats for short actions", n)
	}
}

// countingStore counts the heartbeats applied through it.
type countingStore struct {
	store.Store
	heartbeats atomic.Int32
}

func (c *countingStore) Apply(ctx context.Context, s idem.Scope, ev core.Event, p *idem.Policy, out *store.Applied) error {
	if ev.Kind == core.EventHeartbeat {
		c.heartbeats.Add(1)
	}
	return c.Store.(store.Applier).Apply(ctx, s, ev, p, out)
}

// TestBusiness5xxIsAnOutcome (issue 11 §3): a 5xx the action returns
// without an error is a business outcome: stored, replayed, never run
// again, never taken for "not executed".
func TestBusiness5xxIsAnOutcome(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	bad := idem.Response{StatusCode: 503, Body: []byte(`{"error":"processor_down"}`)}
	r, err := f.ex.Do(ctx, request(key1, payload), f.act(bad, nil))
	if err != nil || r.Kind != idem.ResultExecuted || !r.Recorded || f.status(t, request(key1, payload)) != core.StatusCompleted {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = f.ex.Do(ctx, request(key1, payload), f.act(created, nil))
	if err != nil || r.Kind != idem.ResultReplayed || !r.Response.Equal(bad) || f.ran.Load() != 1 {
		t.Fatalf("retry: %+v %v (ran %d)", r, err, f.ran.Load())
	}
}

// TestRecordedSaysWhetherTheOutcomeWasStored (issue 11 §3): Result.Recorded
// is false when the action ran but its completion could not be written.
func TestRecordedSaysWhetherTheOutcomeWasStored(t *testing.T) {
	for _, mode := range []string{"", "write", "after write"} {
		f := newFixture(t, nil)
		r, err := f.ex.Do(context.Background(), request(key1, payload), func(context.Context, idem.Attempt) (idem.Response, error) {
			f.store.fail(mode)
			return created, nil
		})
		if err != nil || r.Kind != idem.ResultExecuted || !r.Response.Equal(created) {
			t.Fatalf("%q: %+v %v", mode, r, err)
		}
		if want := mode == ""; r.Recorded != want {
			t.Fatalf("%q: Recorded %t, want %t", mode, r.Recorded, want)
		}
	}
}

// TestZombieKeyCountsOnlyLeasesThatRanOut (issue 11 §3): an owner that
// reports it may have executed is not a zombie; a lease that ran out is.
func TestZombieKeyCountsOnlyLeasesThatRanOut(t *testing.T) {
	f := newFixture(t, nil)
	f.unknownKey(t, request(key1, payload)) // the owner's own MarkUnknown
	if n := f.metrics.Total(idem.CounterZombieKey); n != 0 || f.metrics.Total(idem.CounterReconcileScheduled) != 1 {
		t.Fatalf("zombie_key %d after the owner's MarkUnknown", n)
	}
}
