package idem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/fakeclock"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// summary is f's summary of h for the request's use case, event and
// decision.
func (f *fixture) summary(h idem.Histogram, event, decision string) idem.Summary {
	return f.metrics.Summary(h, idem.Labels{UseCase: "payments.create", Event: event, Decision: decision})
}

// TestHistogramsOfAnAttempt: an attempt's duration is measured on the
// store's clock from its reserve to its outcome's write, labelled with
// that write's decision; a stored response's size is recorded once, and a
// replay records neither.
func TestHistogramsOfAnAttempt(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	slow := func(context.Context, idem.Attempt) (idem.Response, error) {
		f.clock.Advance(2 * time.Second)
		return created, nil
	}
	if _, err := f.ex.Do(ctx, request(key1, payload), slow); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ex.Do(ctx, request(key1, payload), slow); err != nil {
		t.Fatal(err)
	}
	want := idem.Summary{Count: 1, Sum: 2, Min: 2, Max: 2}
	if got := f.summary(idem.HistogramAttemptDuration, "complete", "completed"); got != want {
		t.Fatalf("attempt duration %+v, want %+v", got, want)
	}
	size := float64(len(created.Body))
	if got := f.summary(idem.HistogramResponseSize, "complete", "completed"); got != (idem.Summary{Count: 1, Sum: size, Min: size, Max: size}) {
		t.Fatalf("response size %+v, want one of %v bytes", got, size)
	}
	// Not executed: the attempt's time is recorded under failed, and no
	// response was stored.
	other := request("6fa459ea-ee8a-3ca4-894e-db77e160355e", payload)
	if _, err := f.ex.Do(ctx, other, f.act(idem.Response{}, idem.NotExecuted(errors.New("declined upstream")))); !errors.Is(err, idem.ErrNotExecuted) {
		t.Fatal(err)
	}
	if got := f.summary(idem.HistogramAttemptDuration, "fail", "failed"); got.Count != 1 || got.Sum != 0 {
		t.Fatalf("a failed attempt's duration: %+v", got)
	}
	if n := len(f.metrics.HistogramLabels(idem.HistogramResponseSize)); n != 1 {
		t.Fatalf("response size recorded under %d label sets, want 1", n)
	}
}

// TestHistogramOfAnInFlightWait: a request that met another attempt
// records how long it waited, under the decision it ended on: a replay
// once the other attempt settled, in_flight when the wait ran out.
func TestHistogramOfAnInFlightWait(t *testing.T) {
	f := newFixture(t, func(p *idem.Policy) { p.InFlightWait = 200 * time.Millisecond })
	ctx := context.Background()
	release, started := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = f.ex.Do(ctx, request(key1, payload), func(context.Context, idem.Attempt) (idem.Response, error) {
			close(started)
			<-release
			return created, nil
		})
	}()
	<-started
	if _, err := f.ex.Do(ctx, request(key1, payload), f.act(created, nil)); !errors.Is(err, idem.ErrInProgress) {
		t.Fatal(err)
	}
	out := f.summary(idem.HistogramInFlightWait, "reserve", "in_flight")
	if out.Count != 1 || out.Min < 0.15 || out.Max > 5 {
		t.Fatalf("a wait that ran out: %+v, want one of about 0.2 s", out)
	}
	go func() { time.Sleep(20 * time.Millisecond); close(release) }()
	if r, err := f.ex.Do(ctx, request(key1, payload), f.act(created, nil)); err != nil || r.Kind != idem.ResultReplayed {
		t.Fatalf("%+v %v", r, err)
	}
	replay := f.summary(idem.HistogramInFlightWait, "reserve", "replay")
	if replay.Count != 1 || replay.Sum <= 0 || replay.Max > 5 {
		t.Fatalf("a wait that ended in a replay: %+v", replay)
	}
	// A replay that waited for nothing records no wait.
	if _, err := f.ex.Do(ctx, request(key1, payload), f.act(created, nil)); err != nil {
		t.Fatal(err)
	}
	if again := f.summary(idem.HistogramInFlightWait, "reserve", "replay"); again != replay {
		t.Fatalf("a plain replay recorded a wait: %+v", again)
	}
}

// TestHistogramOfAReconcile: the time to reconcile runs from the end of
// the unknown attempt's lease to the reconciler's write, on the store's
// clock, and an executed finding's response size is recorded.
func TestHistogramOfAReconcile(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	if _, err := f.ex.Do(ctx, request(key1, payload), f.act(idem.Response{}, errors.New("timeout"))); !errors.Is(err, idem.ErrOutcomeUnknown) {
		t.Fatal(err)
	}
	lockedUntil := f.record(t, request(key1, payload)).LockedUntil
	f.clock.Advance(lockedUntil.Sub(f.clock.Now()) + 7*time.Second)
	check := func(context.Context, idem.Record) (idem.Finding, error) {
		return idem.Finding{Verdict: idem.VerdictExecuted, Response: created}, nil
	}
	if n, err := f.reconciler(t, check).RunOnce(ctx); n != 1 || err != nil {
		t.Fatalf("settled %d: %v", n, err)
	}
	if got := f.summary(idem.HistogramReconcileDuration, "resolve", "resolved"); got != (idem.Summary{Count: 1, Sum: 7, Min: 7, Max: 7}) {
		t.Fatalf("time to reconcile %+v, want one of 7 s", got)
	}
	if got := f.summary(idem.HistogramResponseSize, "resolve", "resolved"); got.Count != 1 || got.Sum != float64(len(created.Body)) {
		t.Fatalf("the finding's response size: %+v", got)
	}
}

// TestFlowUsedAgainWaitsAnew: a Flow that answered in_flight without
// waiting (a policy with no in-flight wait) and is then begun again under
// a policy that waits must wait: the first request's deadline is not
// kept. Do pools its Flows across executors, so this is two executors in
// one process.
func TestFlowUsedAgainWaitsAnew(t *testing.T) {
	clock := fakeclock.New()
	mem := memstore.New(memstore.Options{Clock: clock.Now})
	ctx := context.Background()
	noWait := idem.PolicyDefault()
	noWait.InFlightWait = 0
	waits := idem.PolicyDefault()
	waits.InFlightWait = time.Second
	exNoWait, _ := idem.New(mem, idem.WithPolicy(noWait))
	exWaits, _ := idem.New(mem, idem.WithPolicy(waits))
	applyTo := func(f *idem.Flow, req idem.Request, p *idem.Policy) {
		var a store.Applied
		err := store.Apply(ctx, mem, req.Scope, f.Next().Event, p, &a)
		f.Applied(&a, err)
	}
	owner, _ := exWaits.Begin(request(key1, payload))
	applyTo(owner, request(key1, payload), &waits) // holds key1 from now on
	f, _ := exNoWait.Begin(request(key1, payload))
	applyTo(f, request(key1, payload), &noWait)
	if f.Next().Kind != idem.EffectAnswer {
		t.Fatalf("no in-flight wait: %v, want an answer", f.Next().Kind)
	}
	clock.Advance(10 * time.Second) // past the first request's deadline, within the lease
	if err := exWaits.BeginIn(f, request(key1, payload)); err != nil {
		t.Fatal(err)
	}
	applyTo(f, request(key1, payload), &waits)
	if f.Next().Kind != idem.EffectWait {
		t.Fatalf("begun again under a policy that waits: %v, want wait", f.Next().Kind)
	}
	if rec, _ := mem.Load(ctx, request(key1, payload).Scope); rec.Record.Status != core.StatusInProgress {
		t.Fatalf("the owner's record is %v", rec.Record.Status)
	}
}
