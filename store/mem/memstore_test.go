package memstore_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/fakeclock"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

func scopeN(i int) idem.Scope {
	return idem.Scope{Tenant: "t", Principal: "p", UseCase: "payments.create", Key: fmt.Sprintf("key-%04d-0123456789abcdef", i)}
}

var fp = idem.Fingerprint(sha256.Sum256([]byte("payload")))

func response(i int) idem.Response {
	return idem.Response{StatusCode: 201, Body: fmt.Appendf(nil, `{"paymentId":"p-%d"}`, i), SchemaVersion: 1}
}

// stores runs f over the memory store with and without its fast path.
func stores(t *testing.T, o memstore.Options, f func(t *testing.T, s store.Store, m *memstore.Store)) {
	t.Run("apply", func(t *testing.T) { m := memstore.New(o); f(t, m, m) })
	t.Run("compare-and-set", func(t *testing.T) { m := memstore.New(o); f(t, store.HideApplier(m), m) })
}

func TestRacingRequestsExecuteOnce(t *testing.T) {
	// hold is how long the one execution takes; with the default 200 ms
	// in-flight wait the others wait and replay, with a 10 ms wait they give
	// up with InFlight.
	for _, mode := range []struct {
		name string
		wait time.Duration
		hold time.Duration
	}{{"waiters replay", 200 * time.Millisecond, 50 * time.Millisecond}, {"waiters give up", 10 * time.Millisecond, 300 * time.Millisecond}} {
		t.Run(mode.name, func(t *testing.T) {
			stores(t, memstore.Options{}, func(t *testing.T, s store.Store, _ *memstore.Store) {
				p := idem.PolicyDefault()
				p.InFlightWait = mode.wait
				executed, replayed, inFlight := race32(t, s, p, mode.hold)
				if mode.wait > mode.hold && replayed == 0 || mode.wait < mode.hold && inFlight == 0 {
					t.Errorf("replayed=%d in_flight=%d: the mode did not happen", replayed, inFlight)
				}
				t.Logf("executed=%d replayed=%d in_flight=%d", executed, replayed, inFlight)
			})
		})
	}
}

// race32 sends 32 requests for one scope at once and checks that exactly
// one executes and every other is a replay of its response or InFlight.
func race32(t *testing.T, s store.Store, p idem.Policy, hold time.Duration) (executed, replayed, inFlight int) {
	ex, err := idem.New(s, idem.WithPolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	var executions atomic.Int32
	action := func(ctx context.Context, a idem.Attempt) (idem.Response, error) {
		executions.Add(1)
		time.Sleep(hold)
		return response(1), nil
	}
	const callers = 32
	type answer struct {
		r   idem.Result
		err error
	}
	answers := make(chan answer, callers)
	var start sync.WaitGroup
	start.Add(1)
	for range callers {
		go func() {
			start.Wait()
			r, err := ex.Do(context.Background(), idem.Request{Scope: scopeN(0), Fingerprint: fp}, action)
			answers <- answer{r, err}
		}()
	}
	start.Done()
	for range callers {
		a := <-answers
		switch {
		case a.err == nil && a.r.Kind == idem.ResultExecuted:
			executed++
		case a.err == nil && a.r.Kind == idem.ResultReplayed:
			replayed++
			if !a.r.Response.Equal(response(1)) {
				t.Errorf("replayed %s", a.r.Response.Describe())
			}
		case errors.Is(a.err, idem.ErrInProgress):
			inFlight++
		default:
			t.Errorf("unexpected answer %+v, %v", a.r, a.err)
		}
	}
	if executed != 1 || executions.Load() != 1 {
		t.Fatalf("executed %d answers, %d actions; want exactly 1", executed, executions.Load())
	}
	return executed, replayed, inFlight
}

func TestRacingCompletionsStoreOneResponse(t *testing.T) {
	stores(t, memstore.Options{}, func(t *testing.T, s store.Store, _ *memstore.Store) {
		p := idem.PolicyDefault()
		ctx := context.Background()
		a, err := applyOver(ctx, s, &p, scopeN(0), core.Event{Kind: core.EventReserve, Fingerprint: fp})
		if err != nil || a.Transition.Decision.Kind != core.DecisionExecute {
			t.Fatalf("reserve: %v %v", a.Transition.Decision.Kind, err)
		}
		token := a.Transition.Decision.Token
		const racers = 32
		decisions := make([]core.DecisionKind, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := applyOver(ctx, s, &p, scopeN(0), core.Event{Kind: core.EventComplete, Token: token, Response: response(i % 4)})
				if err != nil {
					t.Error(err)
				}
				decisions[i] = got.Transition.Decision.Kind
			}()
		}
		wg.Wait()
		snap, err := s.Load(ctx, scopeN(0))
		if err != nil {
			t.Fatal(err)
		}
		completed := 0
		for i, d := range decisions {
			switch d {
			case core.DecisionCompleted:
				completed++
				if !snap.Record.Response.Equal(response(i % 4)) {
					t.Errorf("winner %d's response is not the one stored: %s", i, snap.Record.Response.Describe())
				}
			case core.DecisionAcknowledged:
				if !snap.Record.Response.Equal(response(i % 4)) {
					t.Errorf("racer %d acknowledged although its response differs", i)
				}
			case core.DecisionConflict:
				if snap.Record.Response.Equal(response(i % 4)) {
					t.Errorf("racer %d rejected although its response is the stored one", i)
				}
			default:
				t.Errorf("racer %d: %v", i, d)
			}
		}
		if completed != 1 || snap.Record.Status != core.StatusCompleted {
			t.Fatalf("%d completions, record %s", completed, snap.Record.Describe())
		}
	})
}

func TestOldTokenRefusedAfterLeaseExpiry(t *testing.T) {
	clock := fakeclock.New()
	stores(t, memstore.Options{Clock: clock.Now}, func(t *testing.T, s store.Store, _ *memstore.Store) {
		p := idem.PolicyDefault()
		ctx := context.Background()
		apply := func(ev core.Event) store.Applied {
			t.Helper()
			a, err := applyOver(ctx, s, &p, scopeN(0), ev)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		old := apply(core.Event{Kind: core.EventReserve, Fingerprint: fp}).Transition.Decision.Token
		clock.Advance(p.LeaseDuration)
		if d := apply(core.Event{Kind: core.EventReserve, Fingerprint: fp}).Transition.Decision.Kind; d != core.DecisionReconciling {
			t.Fatalf("after the lease: %v, want reconciling", d)
		}
		apply(core.Event{Kind: core.EventResolve, Token: old, Verdict: core.VerdictNotExecuted})
		fresh := apply(core.Event{Kind: core.EventReserve, Fingerprint: fp})
		if fresh.Transition.Decision.Kind != core.DecisionExecute || fresh.Transition.Decision.Token <= old {
			t.Fatalf("re-execution after the reconciler: %v token %d (old %d)", fresh.Transition.Decision.Kind, fresh.Transition.Decision.Token, old)
		}
		want := fresh.Record.Describe()
		for _, ev := range []core.Event{
			{Kind: core.EventComplete, Token: old, Response: response(9)},
			{Kind: core.EventFail, Token: old},
			{Kind: core.EventMarkUnknown, Token: old},
			{Kind: core.EventHeartbeat, Token: old},
			{Kind: core.EventResolve, Token: old, Verdict: core.VerdictExecuted, Response: response(9)},
		} {
			a := apply(ev)
			if a.Transition.Write.Kind != core.WriteNone {
				t.Errorf("old token's %v wrote %v", ev.Kind, a.Transition.Write.Kind)
			}
			snap, _ := s.Load(ctx, scopeN(0))
			if got := snap.Record.Describe(); got != want {
				t.Fatalf("old token's %v changed the record:\n was %s\n now %s", ev.Kind, want, got)
			}
		}
	})
}

func TestAbandonedAttemptIsReconciledNeverReexecuted(t *testing.T) {
	clock := fakeclock.New()
	stores(t, memstore.Options{Clock: clock.Now}, func(t *testing.T, s store.Store, _ *memstore.Store) {
		p := idem.PolicyDefault()
		p.InFlightWait = 0
		ex, err := idem.New(s, idem.WithPolicy(p))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		req := idem.Request{Scope: scopeN(0), Fingerprint: fp}
		// The "crash": a host that reserved and never reported back.
		call, err := ex.Begin(req)
		if err != nil {
			t.Fatal(err)
		}
		eff := call.Next()
		a, err := applyOver(ctx, s, &p, req.Scope, eff.Event)
		call.Applied(&a, err)
		if call.Next().Kind != idem.EffectRun {
			t.Fatalf("first call did not get to run: %v", call.Next().Kind)
		}
		var executions atomic.Int32
		action := func(context.Context, idem.Attempt) (idem.Response, error) {
			executions.Add(1)
			return response(2), nil
		}
		status := func() core.Status {
			snap, _ := s.Load(ctx, req.Scope)
			return snap.Record.Status
		}
		if _, err := ex.Do(ctx, req, action); !errors.Is(err, idem.ErrInProgress) || status() != core.StatusInProgress {
			t.Fatalf("within the lease: %v, %v", err, status())
		}
		clock.Advance(p.LeaseDuration)
		sweeper, err := ex.Sweeper()
		if err != nil {
			t.Fatal(err)
		}
		if n, err := sweeper.RunOnce(ctx); n != 1 || err != nil || status() != core.StatusUnknown {
			t.Fatalf("sweep: %d %v %v", n, err, status())
		}
		if _, err := ex.Do(ctx, req, action); !errors.Is(err, idem.ErrOutcomeUnknown) {
			t.Fatalf("after the lease: %v", err)
		}
		reconciler, err := ex.Reconciler(func(ctx context.Context, r idem.Record) (idem.Finding, error) {
			return idem.Finding{Verdict: core.VerdictExecuted, Response: response(1)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := reconciler.RunOnce(ctx); n != 1 || err != nil {
			t.Fatalf("reconcile: %d %v", n, err)
		}
		r, err := ex.Do(ctx, req, action)
		if err != nil || r.Kind != idem.ResultReplayed || !r.Response.Equal(response(1)) {
			t.Fatalf("after reconciling: %+v %v", r, err)
		}
		if executions.Load() != 0 {
			t.Fatalf("the action re-executed %d times", executions.Load())
		}
	})
}

func TestTokensNeverRepeatAfterDelete(t *testing.T) {
	stores(t, memstore.Options{}, func(t *testing.T, s store.Store, _ *memstore.Store) {
		p := idem.PolicyDefault()
		p.Fail = core.FailEvict
		ctx := context.Background()
		var last core.Token
		for i := range 20 {
			a, err := applyOver(ctx, s, &p, scopeN(0), core.Event{Kind: core.EventReserve, Fingerprint: fp})
			if err != nil || a.Transition.Decision.Kind != core.DecisionExecute {
				t.Fatalf("round %d: %v %v", i, a.Transition.Decision.Kind, err)
			}
			if tok := a.Transition.Decision.Token; tok <= last {
				t.Fatalf("round %d: token %d after %d", i, tok, last)
			}
			last = a.Transition.Decision.Token
			f, err := applyOver(ctx, s, &p, scopeN(0), core.Event{Kind: core.EventFail, Token: last})
			if err != nil || f.Transition.Write.Kind != core.WriteDelete {
				t.Fatalf("round %d: fail did not delete: %v %v", i, f.Transition.Write.Kind, err)
			}
		}
	})
}

func TestBoundedStoreRefusesAndNeverEvicts(t *testing.T) {
	stores(t, memstore.Options{RecordsMax: 3}, func(t *testing.T, s store.Store, m *memstore.Store) {
		ex, err := idem.New(s)
		if err != nil {
			t.Fatal(err)
		}
		ran := 0
		action := func(context.Context, idem.Attempt) (idem.Response, error) { ran++; return response(0), nil }
		for i := range 3 {
			if _, err := ex.Do(context.Background(), idem.Request{Scope: scopeN(i), Fingerprint: fp}, action); err != nil {
				t.Fatal(err)
			}
		}
		_, err = ex.Do(context.Background(), idem.Request{Scope: scopeN(3), Fingerprint: fp}, action)
		if !errors.Is(err, idem.ErrStoreUnavailable) || !errors.Is(err, store.ErrStoreFull) || ran != 3 {
			t.Fatalf("fourth record: %v (ran %d)", err, ran)
		}
		for i := range 3 {
			r, err := ex.Do(context.Background(), idem.Request{Scope: scopeN(i), Fingerprint: fp}, action)
			if err != nil || r.Kind != idem.ResultReplayed {
				t.Fatalf("record %d was lost: %+v %v", i, r, err)
			}
		}
		if m.Len() != 3 {
			t.Fatalf("%d records", m.Len())
		}
	})
}

func TestWaitWakesOnChangeWithoutPolling(t *testing.T) {
	m := memstore.New(memstore.Options{})
	p := idem.PolicyDefault()
	ctx := context.Background()
	a, err := applyOver(ctx, m, &p, scopeN(0), core.Event{Kind: core.EventReserve, Fingerprint: fp})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing changes: Wait blocks until its context ends.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := m.Wait(short, scopeN(0), a.Record.Version, a.Record.Token); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on an unchanged record returned %v", err)
	}
	// A stale version returns at once.
	if err := m.Wait(ctx, scopeN(0), a.Record.Version-1, a.Record.Token); err != nil {
		t.Fatal(err)
	}
	// A write wakes every waiter.
	woken := make(chan error, 3)
	for range 3 {
		go func() { woken <- m.Wait(ctx, scopeN(0), a.Record.Version, a.Record.Token) }()
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := applyOver(ctx, m, &p, scopeN(0), core.Event{Kind: core.EventComplete, Token: a.Record.Token, Response: response(1)}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		select {
		case err := <-woken:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiter was not woken by the write")
		}
	}
}

// TestChangedIsClosedByTheNextWrite: Changed's channel is open while the
// record holds the version and token asked about, closed at once when it
// does not (another version, no record), and closed by the write that
// changes it, with no goroutine and no timer: the simulator looks at it
// right after each write (the channel Wait selects on).
func TestChangedIsClosedByTheNextWrite(t *testing.T) {
	m := memstore.New(memstore.Options{})
	p := idem.PolicyDefault()
	ctx := context.Background()
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	if !closed(m.Changed(scopeN(1), 1, 1)) {
		t.Fatal("Changed on a scope with no record is open")
	}
	a, err := applyOver(ctx, m, &p, scopeN(0), core.Event{Kind: core.EventReserve, Fingerprint: fp})
	if err != nil {
		t.Fatal(err)
	}
	if !closed(m.Changed(scopeN(0), a.Record.Version+1, a.Record.Token)) || !closed(m.Changed(scopeN(0), a.Record.Version, a.Record.Token+1)) {
		t.Fatal("Changed on another version or token is open")
	}
	ch := m.Changed(scopeN(0), a.Record.Version, a.Record.Token)
	if closed(ch) {
		t.Fatal("Changed on the record as it is is closed")
	}
	if _, err := applyOver(ctx, m, &p, scopeN(1), core.Event{Kind: core.EventReserve, Fingerprint: fp}); err != nil {
		t.Fatal(err)
	}
	if closed(ch) {
		t.Fatal("a write to another scope closed the channel")
	}
	if _, err := applyOver(ctx, m, &p, scopeN(0), core.Event{Kind: core.EventComplete, Token: a.Record.Token, Response: response(1)}); err != nil {
		t.Fatal(err)
	}
	if !closed(ch) {
		t.Fatal("the write that changed the record left the channel open")
	}
}

func TestStoredResponseIsACopy(t *testing.T) {
	m := memstore.New(memstore.Options{})
	p := idem.PolicyDefault()
	ctx := context.Background()
	a, _ := applyOver(ctx, m, &p, scopeN(0), core.Event{Kind: core.EventReserve, Fingerprint: fp})
	resp := response(1)
	if _, err := applyOver(ctx, m, &p, scopeN(0), core.Event{Kind: core.EventComplete, Token: a.Record.Token, Response: resp}); err != nil {
		t.Fatal(err)
	}
	resp.Body[0] = 'X' // the caller reuses its buffer
	snap, _ := m.Load(ctx, scopeN(0))
	if !snap.Record.Response.Equal(response(1)) {
		t.Fatalf("the stored response changed with the caller's buffer: %s", snap.Record.Response.Describe())
	}
}

func TestDueListsInOrderAndBounded(t *testing.T) {
	clock := fakeclock.New()
	m := memstore.New(memstore.Options{Clock: clock.Now})
	p := idem.PolicyDefault()
	ctx := context.Background()
	for i := range 5 {
		if _, err := applyOver(ctx, m, &p, scopeN(i), core.Event{Kind: core.EventReserve, Fingerprint: fp}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	if due, _ := m.Due(ctx, store.DueSweep, 10); len(due) != 0 {
		t.Fatalf("%d due within the lease", len(due))
	}
	clock.Advance(p.LeaseDuration)
	due, err := m.Due(ctx, store.DueSweep, 3)
	if err != nil || len(due) != 3 {
		t.Fatalf("due: %d %v", len(due), err)
	}
	for i, r := range due {
		if r.Scope != scopeN(i) {
			t.Fatalf("due[%d] is %v: not most overdue first", i, r.Scope)
		}
	}
	if rec, _ := m.Due(ctx, store.DueReconcile, 10); len(rec) != 0 {
		t.Fatalf("%d due for reconciling before any is unknown", len(rec))
	}
}

func TestCancelledContextIsAnError(t *testing.T) {
	m := memstore.New(memstore.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Load(ctx, scopeN(0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("load: %v", err)
	}
	rec := core.Record{Scope: scopeN(0)}
	if err := m.Insert(ctx, &rec); !errors.Is(err, context.Canceled) {
		t.Fatalf("insert: %v", err)
	}
}

func TestScopesSharingAKeyAreUnrelated(t *testing.T) {
	m := memstore.New(memstore.Options{})
	p := idem.PolicyDefault()
	p.Fail = core.FailEvict
	ctx := context.Background()
	scopes := []idem.Scope{scopeN(0), scopeN(0), scopeN(0), scopeN(0)}
	scopes[1].Principal = "other"
	scopes[2].Tenant = ""
	scopes[3].UseCase = "refunds.create"
	tokens := make([]core.Token, len(scopes))
	for i, s := range scopes {
		a, err := applyOver(ctx, m, &p, s, core.Event{Kind: core.EventReserve, Fingerprint: fp})
		if err != nil || a.Transition.Decision.Kind != core.DecisionExecute {
			t.Fatalf("scope %d: %v %v", i, a.Transition.Decision.Kind, err)
		}
		tokens[i] = a.Transition.Decision.Token
	}
	// Remove the middle and the head of the chain; the others stand.
	for _, i := range []int{1, 3} {
		if a, err := applyOver(ctx, m, &p, scopes[i], core.Event{Kind: core.EventFail, Token: tokens[i]}); err != nil || a.Transition.Write.Kind != core.WriteDelete {
			t.Fatalf("evict %d: %v", i, err)
		}
	}
	for i, s := range scopes {
		snap, err := m.Load(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		want := core.StatusInProgress
		if i == 1 || i == 3 {
			want = core.StatusAbsent
		}
		if snap.Record.Status != want || (want == core.StatusInProgress && snap.Record.Token != tokens[i]) {
			t.Fatalf("scope %d: %s", i, snap.Record.Describe())
		}
	}
	if m.Len() != 2 {
		t.Fatalf("%d records", m.Len())
	}
}

// TestDueNoticesNewlyDueRecords: a shard that was scanned and found nothing
// due is looked at again once a write makes one of its records due.
func TestDueNoticesNewlyDueRecords(t *testing.T) {
	clock := fakeclock.New()
	m := memstore.New(memstore.Options{Clock: clock.Now, Shards: 4})
	p := idem.PolicyDefault()
	ctx := context.Background()
	tokens := map[int]core.Token{}
	for i := range 40 {
		a, err := applyOver(ctx, m, &p, scopeN(i), core.Event{Kind: core.EventReserve, Fingerprint: fp})
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = a.Transition.Decision.Token
	}
	for _, kind := range []store.DueKind{store.DueSweep, store.DueReconcile} {
		if due, _ := m.Due(ctx, kind, 100); len(due) != 0 {
			t.Fatalf("%v: %d due", kind, len(due))
		}
	}
	// Now one record becomes unknown: due for the reconciler at once.
	if _, err := applyOver(ctx, m, &p, scopeN(17), core.Event{Kind: core.EventMarkUnknown, Token: tokens[17]}); err != nil {
		t.Fatal(err)
	}
	due, _ := m.Due(ctx, store.DueReconcile, 100)
	if len(due) != 1 || due[0].Scope != scopeN(17) {
		t.Fatalf("reconcile: %d due", len(due))
	}
	clock.Advance(p.LeaseDuration)
	if due, _ := m.Due(ctx, store.DueSweep, 100); len(due) != 39 {
		t.Fatalf("sweep after the lease: %d due, want 39", len(due))
	}
	if _, err := m.Due(ctx, store.DueKind(9), 1); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
}

// TestBadInputIsAnError: a missing record is an error value, not a panic,
// and an absurd shard count is bounded, not an out-of-memory crash.
func TestBadInputIsAnError(t *testing.T) {
	ctx := context.Background()
	m := memstore.New(memstore.Options{Shards: 1 << 40})
	if err := m.Insert(ctx, nil); !errors.Is(err, core.ErrInvalidRecord) {
		t.Fatalf("insert nil: %v", err)
	}
	if err := m.CompareAndSet(ctx, nil, 1, 1); !errors.Is(err, core.ErrInvalidRecord) {
		t.Fatalf("compare-and-set nil: %v", err)
	}
	p := idem.PolicyDefault()
	if a, err := applyOver(ctx, m, &p, scopeN(1), core.Event{Kind: core.EventReserve, Fingerprint: fp}); err != nil || a.Transition.Decision.Kind != core.DecisionExecute {
		t.Fatalf("the bounded store does not work: %v %v", a.Transition.Decision.Kind, err)
	}
	if m.Len() != 1 {
		t.Fatalf("%d records", m.Len())
	}
}

// TestTokensAreUniqueAcrossScopes: shards count their tokens apart, yet no
// two reads of the store, of any scopes, get the same token, and each
// scope's tokens grow.
func TestTokensAreUniqueAcrossScopes(t *testing.T) {
	ctx := context.Background()
	for _, shards := range []int{1, 4, 64} {
		m := memstore.New(memstore.Options{Shards: shards})
		seen := map[core.Token]bool{}
		last := map[idem.Scope]core.Token{}
		for round := range 3 {
			for i := range 300 {
				sc := scopeN(i)
				snap, err := m.Load(ctx, sc)
				if err != nil {
					t.Fatal(err)
				}
				tok := snap.FreshToken
				if tok == 0 || seen[tok] {
					t.Fatalf("%d shards, round %d, scope %d: token %d again", shards, round, i, tok)
				}
				if tok <= last[sc] {
					t.Fatalf("%d shards: scope %d got token %d after %d", shards, i, tok, last[sc])
				}
				seen[tok], last[sc] = true, tok
			}
		}
	}
}

// TestKeysSpreadOverShards: keys that differ only in a few bytes still use
// every shard, with either hash. A token carries its shard's number in its
// low bits, which shows where each scope went.
func TestKeysSpreadOverShards(t *testing.T) {
	ctx := context.Background()
	for _, deterministic := range []bool{false, true} {
		m := memstore.New(memstore.Options{Shards: 64, Deterministic: deterministic})
		perShard := map[core.Token]int{}
		for i := range 10000 {
			sc := idem.Scope{Principal: "p", UseCase: "u", Key: fmt.Sprintf("abcd%04d", i)}
			snap, err := m.Load(ctx, sc)
			if err != nil {
				t.Fatal(err)
			}
			perShard[snap.FreshToken&63]++
		}
		for shard, n := range perShard {
			if n > 2*10000/64 {
				t.Errorf("deterministic=%t: shard %d holds %d of 10,000 keys", deterministic, shard, n)
			}
		}
		if len(perShard) != 64 {
			t.Errorf("deterministic=%t: %d of 64 shards used", deterministic, len(perShard))
		}
	}
}

// applyOver is store.Apply with an Applied of its own.
func applyOver(ctx context.Context, s store.Store, p *core.Policy, scope core.Scope, ev core.Event) (store.Applied, error) {
	var a store.Applied
	err := store.Apply(ctx, s, scope, ev, p, &a)
	return a, err
}

// TestFullStoreRecoversWhenRecordsExpire (issue 10, defect 2): with soft
// expiry, an expired record drops its response and frees its place at once,
// so that a full store takes new keys again; its tombstone is pruned after
// the retention, and a client reusing the expired key executes afresh.
func TestFullStoreRecoversWhenRecordsExpire(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	stores(t, memstore.Options{RecordsMax: 2, Clock: clock}, func(t *testing.T, s store.Store, m *memstore.Store) {
		p := idem.PolicyDefault()
		p.TTL, p.TombstoneRetention = time.Hour, 2*time.Hour
		ex, err := idem.New(s, idem.WithPolicy(p))
		if err != nil {
			t.Fatal(err)
		}
		sweeper, _ := ex.Sweeper()
		ctx := context.Background()
		ran := 0
		action := func(context.Context, idem.Attempt) (idem.Response, error) { ran++; return response(ran), nil }
		for i := range 2 {
			if _, err := ex.Do(ctx, idem.Request{Scope: scopeN(i), Fingerprint: fp}, action); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ex.Do(ctx, idem.Request{Scope: scopeN(2), Fingerprint: fp}, action); !errors.Is(err, store.ErrStoreFull) {
			t.Fatalf("third key in a store of two: %v", err)
		}
		now = now.Add(time.Hour)
		if n, err := sweeper.RunOnce(ctx); n != 2 || err != nil {
			t.Fatalf("expired %d: %v", n, err)
		}
		snap, _ := m.Load(ctx, scopeN(0))
		if snap.Record.Status != core.StatusExpired || snap.Record.Response.StatusCode != 0 || snap.Record.Response.Body != nil {
			t.Fatalf("a tombstone keeps its response: %s", snap.Record.Describe())
		}
		if r, err := ex.Do(ctx, idem.Request{Scope: scopeN(2), Fingerprint: fp}, action); err != nil || r.Kind != idem.ResultExecuted {
			t.Fatalf("the full store did not recover: %+v %v", r, err)
		}
		// Reusing an expired key is a new incarnation: it executes.
		if r, err := ex.Do(ctx, idem.Request{Scope: scopeN(1), Fingerprint: fp}, action); err != nil || r.Kind != idem.ResultExecuted || ran != 4 {
			t.Fatalf("expired key reused: %+v %v (ran %d)", r, err, ran)
		}
		now = now.Add(2 * time.Hour)
		if _, err := sweeper.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if snap, _ := m.Load(ctx, scopeN(0)); snap.Record.Exists() {
			t.Fatalf("the tombstone outlived its retention: %s", snap.Record.Describe())
		}
	})
}
