package idem_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/fakeclock"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// flakyStore fails the calls its switches name, before or after applying
// them, and rejects (store.ErrRejected) the writes rejectIf matches.
type flakyStore struct {
	store.Store
	failLoad, failWrite, failAfterWrite atomic.Bool
	rejectIf                            func(*idem.Record) bool // set before use
}

// errCheckViolation is how flakyStore rejects a write: for good, as a
// database rejects a check constraint.
var errCheckViolation = fmt.Errorf("check constraint violated: %w", store.ErrRejected)

var errDown = errors.New("connection refused")

func (f *flakyStore) Load(ctx context.Context, s idem.Scope) (store.Snapshot, error) {
	if f.failLoad.Load() {
		return store.Snapshot{}, errDown
	}
	return f.Store.Load(ctx, s)
}

func (f *flakyStore) write(apply func() error) error {
	if f.failWrite.Load() {
		return errDown
	}
	err := apply()
	if err == nil && f.failAfterWrite.Load() {
		return errDown // an ambiguous commit: applied, but the caller hears an error
	}
	return err
}

// fail turns on the failure mode names: "load", "write" or "after write"
// (any other name, none).
func (f *flakyStore) fail(mode string) {
	switch mode {
	case "load":
		f.failLoad.Store(true)
	case "write":
		f.failWrite.Store(true)
	case "after write":
		f.failAfterWrite.Store(true)
	}
}

func (f *flakyStore) rejected(r *idem.Record) bool { return f.rejectIf != nil && f.rejectIf(r) }

func (f *flakyStore) Insert(ctx context.Context, r *idem.Record) error {
	if f.rejected(r) {
		return errCheckViolation
	}
	return f.write(func() error { return f.Store.Insert(ctx, r) })
}
func (f *flakyStore) CompareAndSet(ctx context.Context, r *idem.Record, v uint64, t idem.Token) error {
	if f.rejected(r) {
		return errCheckViolation
	}
	return f.write(func() error { return f.Store.CompareAndSet(ctx, r, v, t) })
}
func (f *flakyStore) Delete(ctx context.Context, s idem.Scope, v uint64, t idem.Token) error {
	return f.write(func() error { return f.Store.Delete(ctx, s, v, t) })
}

type fixture struct {
	clock   *fakeclock.Clock
	mem     *memstore.Store
	store   *flakyStore
	metrics *idem.MetricsMem
	ex      *idem.Executor
	ran     atomic.Int32
}

func newFixture(t *testing.T, mutate func(*idem.Policy)) *fixture {
	t.Helper()
	f := &fixture{clock: fakeclock.New(), metrics: &idem.MetricsMem{}}
	f.mem = memstore.New(memstore.Options{Clock: f.clock.Now})
	f.store = &flakyStore{Store: f.mem}
	p := idem.PolicyDefault()
	p.InFlightWait = 0
	if mutate != nil {
		mutate(&p)
	}
	ex, err := idem.New(f.store, idem.WithPolicy(p), idem.WithMetrics(f.metrics))
	if err != nil {
		t.Fatal(err)
	}
	f.ex = ex
	return f
}

var (
	payload = idem.Fingerprint(sha256.Sum256([]byte(`{"amount":12000}`)))
	other   = idem.Fingerprint(sha256.Sum256([]byte(`{"amount":99999}`)))
	created = idem.Response{StatusCode: 201, Headers: []idem.Header{{Name: "Content-Type", Value: "application/json"}}, Body: []byte(`{"paymentId":"p-1"}`), SchemaVersion: 1}
)

func request(key string, fp idem.Fingerprint) idem.Request {
	return idem.Request{Scope: idem.Scope{Tenant: "acme", Principal: "user-1", UseCase: "payments.create", Key: key}, Fingerprint: fp}
}

const key1 = "550e8400-e29b-41d4-a716-446655440000"

// act returns an action that counts its runs and returns resp, err.
func (f *fixture) act(resp idem.Response, err error) idem.Action {
	return func(context.Context, idem.Attempt) (idem.Response, error) {
		f.ran.Add(1)
		return resp, err
	}
}

func (f *fixture) status(t *testing.T, req idem.Request) core.Status {
	t.Helper()
	return f.record(t, req).Status
}

// record is what the memory store holds for req's scope.
func (f *fixture) record(t *testing.T, req idem.Request) idem.Record {
	t.Helper()
	snap, err := f.mem.Load(context.Background(), req.Scope)
	if err != nil {
		t.Fatal(err)
	}
	return snap.Record
}

func TestExecuteThenReplayByteForByte(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	r, err := f.ex.Do(ctx, request(key1, payload), f.act(created, nil))
	if err != nil || r.Kind != idem.ResultExecuted || !r.Recorded || !r.Response.Equal(created) || r.Token == 0 {
		t.Fatalf("first: %+v %v", r, err)
	}
	for range 3 {
		r, err := f.ex.Do(ctx, request(key1, payload), f.act(idem.Response{StatusCode: 500}, nil))
		if err != nil || r.Kind != idem.ResultReplayed || !r.Response.Equal(created) {
			t.Fatalf("replay: %+v %v", r, err)
		}
	}
	if f.ran.Load() != 1 {
		t.Fatalf("ran %d times", f.ran.Load())
	}
	if f.metrics.Total(idem.CounterReserveCreated) != 1 || f.metrics.Total(idem.CounterReserveReplay) != 3 {
		t.Fatalf("created=%d replay=%d", f.metrics.Total(idem.CounterReserveCreated), f.metrics.Total(idem.CounterReserveReplay))
	}
}

func TestBusinessErrorIsAnOutcome(t *testing.T) {
	f := newFixture(t, nil)
	declined := idem.Response{StatusCode: 402, Body: []byte(`{"error":"card_declined"}`)}
	for range 2 {
		r, err := f.ex.Do(context.Background(), request(key1, payload), f.act(declined, nil))
		if err != nil || !r.Response.Equal(declined) {
			t.Fatalf("%+v %v", r, err)
		}
	}
	if f.ran.Load() != 1 {
		t.Fatalf("a declined card ran %d times", f.ran.Load())
	}
}

func TestKeyMisuse(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	if _, err := f.ex.Do(ctx, request(key1, payload), f.act(created, nil)); err != nil {
		t.Fatal(err)
	}
	r, err := f.ex.Do(ctx, request(key1, other), f.act(created, nil))
	var e *idem.Error
	if !errors.Is(err, idem.ErrKeyMisuse) || !errors.As(err, &e) || e.Status != http.StatusUnprocessableEntity || r.Response.Body != nil {
		t.Fatalf("%+v %v", r, err)
	}
	if f.ran.Load() != 1 || f.metrics.Total(idem.CounterReserveKeyMisuse) != 1 {
		t.Fatalf("ran %d, key_misuse %d", f.ran.Load(), f.metrics.Total(idem.CounterReserveKeyMisuse))
	}
}

func TestStoreDownFailsClosed(t *testing.T) {
	for _, mode := range []string{"load", "write", "after write"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, nil)
			f.store.fail(mode)
			_, err := f.ex.Do(context.Background(), request(key1, payload), f.act(created, nil))
			var e *idem.Error
			if !errors.Is(err, idem.ErrStoreUnavailable) || !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || !errors.Is(err, errDown) {
				t.Fatalf("%v", err)
			}
			if f.ran.Load() != 0 {
				t.Fatal("the action ran while the store was failing")
			}
			if f.metrics.Total(idem.CounterStoreError) == 0 {
				t.Fatal("store error not counted")
			}
			if mode == "after write" {
				// The reservation did apply: the key is in progress, and after
				// the lease it goes to the reconciler, never to a re-execution.
				f.store.failAfterWrite.Store(false)
				if st := f.status(t, request(key1, payload)); st != core.StatusInProgress {
					t.Fatalf("ambiguous reserve left %v", st)
				}
			}
		})
	}
}

func TestNotExecutedFreesTheKey(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	cause := errors.New("validation failed")
	_, err := f.ex.Do(ctx, request(key1, payload), f.act(idem.Response{}, idem.NotExecuted(cause)))
	if !errors.Is(err, idem.ErrNotExecuted) || !errors.Is(err, cause) {
		t.Fatalf("%v", err)
	}
	if st := f.status(t, request(key1, payload)); st != core.StatusFailedRetryable {
		t.Fatalf("status %v", st)
	}
	r, err := f.ex.Do(ctx, request(key1, payload), f.act(created, nil))
	if err != nil || r.Kind != idem.ResultExecuted || f.ran.Load() != 2 {
		t.Fatalf("retry: %+v %v (ran %d)", r, err, f.ran.Load())
	}
	if f.metrics.Total(idem.CounterReserveFailedRetry) != 1 {
		t.Fatal("failed_retry not counted")
	}
}

func TestUncertainOutcomesAreUnknownNeverRerun(t *testing.T) {
	cases := map[string]idem.Action{
		"plain error": func(context.Context, idem.Attempt) (idem.Response, error) {
			return idem.Response{}, errors.New("gateway timeout")
		},
		"deadline": func(ctx context.Context, _ idem.Attempt) (idem.Response, error) {
			return idem.Response{}, fmt.Errorf("charge: %w", context.DeadlineExceeded)
		},
	}
	for name, action := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, nil)
			ctx := context.Background()
			_, err := f.ex.Do(ctx, request(key1, payload), action)
			var e *idem.Error
			if !errors.Is(err, idem.ErrOutcomeUnknown) || !errors.As(err, &e) || e.RetryAfter <= 0 {
				t.Fatalf("%v", err)
			}
			if st := f.status(t, request(key1, payload)); st != core.StatusUnknown {
				t.Fatalf("status %v", st)
			}
			_, err = f.ex.Do(ctx, request(key1, payload), f.act(created, nil))
			if !errors.Is(err, idem.ErrOutcomeUnknown) || f.ran.Load() != 0 {
				t.Fatalf("retry of an unknown: %v (ran %d)", err, f.ran.Load())
			}
			if f.metrics.Total(idem.CounterReconcileScheduled) != 1 || f.metrics.Total(idem.CounterReserveUnknown) != 1 {
				t.Fatal("unknown not counted")
			}
		})
	}
}

func TestOutcomeRecordedAfterClientDisconnects(t *testing.T) {
	f := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	r, err := f.ex.Do(ctx, request(key1, payload), func(context.Context, idem.Attempt) (idem.Response, error) {
		cancel() // the client hangs up after the charge went through
		return created, nil
	})
	if err != nil || !r.Recorded {
		t.Fatalf("%+v %v", r, err)
	}
	if st := f.status(t, request(key1, payload)); st != core.StatusCompleted {
		t.Fatalf("status %v: the outcome was lost with the client's context", st)
	}
}

func TestInFlightWaitReplaysOrAnswersInProgress(t *testing.T) {
	for _, accepted := range []bool{false, true} {
		f := newFixture(t, func(p *idem.Policy) {
			p.InFlightWait = 300 * time.Millisecond
			if accepted {
				p.InFlightAnswer = core.InFlightAccepted
			}
		})
		ctx := context.Background()
		release := make(chan struct{})
		started := make(chan struct{})
		go func() {
			_, _ = f.ex.Do(ctx, request(key1, payload), func(context.Context, idem.Attempt) (idem.Response, error) {
				close(started)
				<-release
				return created, nil
			})
		}()
		<-started
		// The first attempt outlasts the wait: InFlight, with a retry hint.
		_, err := f.ex.Do(ctx, request(key1, payload), f.act(created, nil))
		var e *idem.Error
		if !errors.Is(err, idem.ErrInProgress) || !errors.As(err, &e) || e.RetryAfter != time.Second {
			t.Fatalf("%v", err)
		}
		want := http.StatusConflict
		if accepted {
			want = http.StatusAccepted
		}
		if e.Status != want {
			t.Fatalf("status %d, want %d", e.Status, want)
		}
		// The first attempt finishes during the wait: the waiter replays it.
		go func() { time.Sleep(20 * time.Millisecond); close(release) }()
		r, err := f.ex.Do(ctx, request(key1, payload), f.act(created, nil))
		if err != nil || r.Kind != idem.ResultReplayed || f.ran.Load() != 0 {
			t.Fatalf("waiter: %+v %v (ran %d)", r, err, f.ran.Load())
		}
	}
}

func TestHeartbeatKeepsALongActionsLease(t *testing.T) {
	mem := memstore.New(memstore.Options{})
	p := idem.PolicyDefault()
	p.LeaseDuration = 600 * time.Millisecond
	p.InFlightWait = 0
	ex, err := idem.New(mem, idem.WithPolicy(p), idem.WithHeartbeatInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	sweeper, err := ex.Sweeper()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := ex.Do(ctx, request(key1, payload), func(ctx context.Context, a idem.Attempt) (idem.Response, error) {
		for range 10 { // 1.5 s, well past the 600 ms lease
			time.Sleep(150 * time.Millisecond)
			if _, err := sweeper.RunOnce(ctx); err != nil {
				return idem.Response{}, err
			}
			snap, _ := mem.Load(ctx, request(key1, payload).Scope)
			if snap.Record.Status != core.StatusInProgress {
				return idem.Response{}, fmt.Errorf("lease lost while running: %s", snap.Record.Describe())
			}
		}
		return created, nil
	})
	if err != nil || !r.Recorded {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestUnstorableResponseGoesToTheReconciler(t *testing.T) {
	for name, resp := range map[string]idem.Response{
		"header injection": {StatusCode: 201, Headers: []idem.Header{{Name: "X-A", Value: "a\r\nSet-Cookie: x"}}},
		"bad header name":  {StatusCode: 201, Headers: []idem.Header{{Name: "X A", Value: "a"}}},
		"too large":        {StatusCode: 201, Body: make([]byte, 2<<20)},
		"no status":        {Body: []byte("x")},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, nil)
			_, err := f.ex.Do(context.Background(), request(key1, payload), f.act(resp, nil))
			if !errors.Is(err, idem.ErrResponseInvalid) {
				t.Fatalf("%v", err)
			}
			if st := f.status(t, request(key1, payload)); st != core.StatusUnknown {
				t.Fatalf("status %v", st)
			}
		})
	}
}

func TestCompleteInTheCallersTransaction(t *testing.T) {
	f := newFixture(t, nil)
	r, err := f.ex.Do(context.Background(), request(key1, payload), func(ctx context.Context, a idem.Attempt) (idem.Response, error) {
		// Here a pgx user would pass a store bound to their transaction.
		if err := a.CompleteIn(ctx, f.mem, created); err != nil {
			return idem.Response{}, err
		}
		return created, nil
	})
	if err != nil || !r.Recorded || f.status(t, request(key1, payload)) != core.StatusCompleted {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestInvalidRequests(t *testing.T) {
	f := newFixture(t, nil)
	cases := map[string]struct {
		req  idem.Request
		want error
	}{
		"empty key":         {request("", payload), idem.ErrInvalidKey},
		"short key":         {request("short", payload), idem.ErrInvalidKey},
		"long key":          {request(strings.Repeat("k", 256), payload), idem.ErrInvalidKey},
		"control character": {request("0123456789abcdef\n", payload), idem.ErrInvalidKey},
		"non-ASCII":         {request("0123456789abcdéf", payload), idem.ErrInvalidKey},
		"no fingerprint":    {request(key1, idem.Fingerprint{}), idem.ErrInvalidRequest},
		"no principal":      {idem.Request{Scope: idem.Scope{UseCase: "u", Key: key1}, Fingerprint: payload}, idem.ErrInvalidRequest},
		"no use case":       {idem.Request{Scope: idem.Scope{Principal: "p", Key: key1}, Fingerprint: payload}, idem.ErrInvalidRequest},
	}
	for name, c := range cases {
		_, err := f.ex.Do(context.Background(), c.req, f.act(created, nil))
		var e *idem.Error
		if !errors.Is(err, c.want) || !errors.As(err, &e) || e.Status != http.StatusBadRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
	if f.ran.Load() != 0 {
		t.Fatal("an invalid request ran")
	}
	if _, err := idem.New(f.mem, idem.WithPolicy(idem.Policy{})); !errors.Is(err, core.ErrInvalidPolicy) {
		t.Fatalf("zero policy accepted: %v", err)
	}
	if _, err := idem.New(nil); err == nil {
		t.Fatal("nil store accepted")
	}
}

func TestScopesAreIsolated(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	base := request(key1, payload)
	variants := []idem.Request{base, base, base, base}
	variants[1].Scope.Principal = "user-2"
	variants[2].Scope.Tenant = "other"
	variants[3].Scope.UseCase = "refunds.create"
	for i, req := range variants {
		resp := created
		resp.Body = fmt.Appendf(nil, `{"n":%d}`, i)
		r, err := f.ex.Do(ctx, req, f.act(resp, nil))
		if err != nil || r.Kind != idem.ResultExecuted {
			t.Fatalf("variant %d saw another scope's record: %+v %v", i, r, err)
		}
	}
	if f.ran.Load() != 4 {
		t.Fatalf("ran %d", f.ran.Load())
	}
}

func TestMetricLabelsNeverHoldIdentities(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	req := request(key1, payload)
	_, _ = f.ex.Do(ctx, req, f.act(created, nil))
	_, _ = f.ex.Do(ctx, req, f.act(created, nil))
	_, _ = f.ex.Do(ctx, request(key1, other), f.act(created, nil))
	f.store.failLoad.Store(true)
	_, _ = f.ex.Do(ctx, req, f.act(created, nil))
	seen := 0
	for _, c := range idem.Counters() {
		for _, l := range f.metrics.Labels(c) {
			seen++
			for _, secret := range []string{req.Scope.Key, req.Scope.Principal, req.Scope.Tenant} {
				if strings.Contains(l.UseCase, secret) || strings.Contains(l.Decision, secret) || strings.Contains(l.Event, secret) {
					t.Fatalf("%s has label %+v holding %q", c.Name(), l, secret)
				}
			}
			if l.UseCase != "payments.create" {
				t.Fatalf("%s: use case label %q", c.Name(), l.UseCase)
			}
		}
	}
	if seen < 4 {
		t.Fatalf("only %d label sets recorded", seen)
	}
	names := map[string]bool{}
	for _, c := range idem.Counters() {
		if !strings.HasPrefix(c.Name(), "api.idempotency.") || !strings.HasSuffix(c.Name(), ".count") || names[c.Name()] {
			t.Fatalf("counter name %q", c.Name())
		}
		names[c.Name()] = true
	}
	// SPEC §7's twelve, worker.error, which makes a worker's failed run
	// visible to an operator, and store.rejected, a store's rejection that is
	// not an outage.
	if len(names) != 14 || !names["api.idempotency.worker.error.count"] || !names["api.idempotency.store.rejected.count"] {
		t.Fatalf("%d counters, want SPEC §7's 12, worker.error and store.rejected", len(names))
	}
}

func TestCallerGivingUpWhileWaitingIsInProgress(t *testing.T) {
	f := newFixture(t, func(p *idem.Policy) { p.InFlightWait = 5 * time.Second })
	release := make(chan struct{})
	started := make(chan struct{})
	go func() {
		_, _ = f.ex.Do(context.Background(), request(key1, payload), func(context.Context, idem.Attempt) (idem.Response, error) {
			close(started)
			<-release
			return created, nil
		})
	}()
	<-started
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := f.ex.Do(ctx, request(key1, payload), f.act(created, nil))
	var e *idem.Error
	if !errors.Is(err, idem.ErrInProgress) || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &e) || e.RetryAfter <= 0 {
		t.Fatalf("%v", err)
	}
}

func TestMemMetricsCountsByLabel(t *testing.T) {
	var m idem.MetricsMem
	a := idem.Labels{UseCase: "payments.create", Event: "reserve", Decision: "execute"}
	b := idem.Labels{UseCase: "refunds.create", Event: "reserve", Decision: "execute"}
	m.Add(idem.CounterReserveCreated, a, 2)
	m.Add(idem.CounterReserveCreated, b, 1)
	m.Add(idem.Counter(200), a, 1) // out of range: ignored, not a panic
	if m.Count(idem.CounterReserveCreated, a) != 2 || m.Count(idem.CounterReserveCreated, b) != 1 || m.Total(idem.CounterReserveCreated) != 3 {
		t.Fatalf("counts %d %d total %d", m.Count(idem.CounterReserveCreated, a), m.Count(idem.CounterReserveCreated, b), m.Total(idem.CounterReserveCreated))
	}
	if ls := m.Labels(idem.CounterReserveCreated); len(ls) != 2 || ls[0] != a || ls[1] != b {
		t.Fatalf("labels %v", ls)
	}
	if m.Total(idem.Counter(200)) != 0 || idem.Counter(200).Name() != "counter(200)" {
		t.Fatal("an unknown counter")
	}
	var nop idem.MetricsNop
	nop.Add(idem.CounterStoreError, a, 1) // does nothing, and must not panic
}

// afterApplyFails is an Applier whose Apply applies, then reports a failure:
// an ambiguous commit on the fast path.
type afterApplyFails struct{ *memstore.Store }

func (s afterApplyFails) Apply(ctx context.Context, scope idem.Scope, ev core.Event, p *idem.Policy, out *store.Applied) error {
	if err := s.Store.Apply(ctx, scope, ev, p, out); err != nil {
		return err
	}
	return errDown
}

// TestStoreApplyLeavesNothingOnError: whether the store fails a load, a
// write, or after a write applied (an ambiguous commit), on the
// load-step-write path or an Applier's, and when the core refuses the event,
// store.Apply leaves the zero Applied behind: nothing of an earlier event, nor
// a write that may not have happened, passes for the outcome.
func TestStoreApplyLeavesNothingOnError(t *testing.T) {
	for _, mode := range []string{"load", "write", "after write", "after apply", "core refuses", "core refuses, applier"} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, nil)
			var s store.Store = f.store
			switch mode {
			case "after apply":
				s = afterApplyFails{f.mem}
			case "core refuses, applier":
				s = f.mem
			}
			ctx := context.Background()
			p := f.ex.Policy()
			var out store.Applied
			if err := store.Apply(ctx, f.mem, request(key1, other).Scope, core.Event{Kind: core.EventReserve, Fingerprint: other}, &p, &out); err != nil {
				t.Fatal(err) // an earlier event's outcome, left in out
			}
			ev := core.Event{Kind: core.EventReserve, Fingerprint: payload}
			f.store.fail(mode)
			if strings.HasPrefix(mode, "core refuses") {
				ev.Fingerprint = idem.Fingerprint{} // no fingerprint: bad input
			}
			err := store.Apply(ctx, s, request("550e8400-e29b-41d4-a716-446655440001", payload).Scope, ev, &p, &out)
			if err == nil {
				t.Fatal("no error")
			}
			if !reflect.ValueOf(out).IsZero() {
				t.Fatalf("after %v, out holds %s, decision %v", err, out.Record.Describe(), out.Transition.Decision.Kind)
			}
		})
	}
}
