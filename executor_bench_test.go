package idem_test

import (
	"context"
	"crypto/sha256"
	"strconv"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// BenchmarkDo is Executor.Do over the memory store: a request with a new
// key (reserve, run the action, complete), and a retry of a completed one
// (a replay). The action only returns its response: what is measured is
// the executor and the store around it.
func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
	fp, _, action, keys := benchFixture()
	newExecutor := func() *idem.Executor {
		ex, err := idem.New(memstore.New(memstore.Options{}))
		if err != nil {
			b.Fatal(err)
		}
		return ex
	}
	b.Run("execute", func(b *testing.B) {
		ex := newExecutor()
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			req := request(keys[i&(len(keys)-1)], fp)
			if i++; i&(len(keys)-1) == 0 {
				ex = newExecutor()
			}
			if r, err := ex.Do(ctx, req, action); err != nil || r.Kind != idem.ResultExecuted {
				b.Fatal(r.Kind, err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		ex := newExecutor()
		req := request(keys[0], fp)
		if _, err := ex.Do(ctx, req, action); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if r, err := ex.Do(ctx, req, action); err != nil || r.Kind != idem.ResultReplayed {
				b.Fatal(r.Kind, err)
			}
		}
	})
}

// BenchmarkDoOverStore sets Do beside the memory store it runs over, in one
// run, for the targets of BENCHMARKS.md: a new key through Do against the
// store's own Reserve + Complete, and a replay through Do against a bare
// Load of the record.
func BenchmarkDoOverStore(b *testing.B) {
	ctx := context.Background()
	fp, resp, action, keys := benchFixture()
	p := idem.PolicyDefault()
	newStore := func() *memstore.Store { return memstore.New(memstore.Options{}) }
	b.Run("new-key/store", func(b *testing.B) {
		m, i := newStore(), 0
		var a store.Applied
		b.ReportAllocs()
		for b.Loop() {
			scope := request(keys[i&(len(keys)-1)], fp).Scope
			if i++; i&(len(keys)-1) == 0 {
				m = newStore()
			}
			if err := store.Apply(ctx, m, scope, core.Event{Kind: core.EventReserve, Fingerprint: fp}, &p, &a); err != nil || a.Transition.Decision.Kind != core.DecisionExecute {
				b.Fatal(err)
			}
			if err := store.Apply(ctx, m, scope, core.Event{Kind: core.EventComplete, Token: a.Transition.Decision.Token, Response: resp}, &p, &a); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("new-key/do", func(b *testing.B) {
		ex, _ := idem.New(newStore())
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			req := request(keys[i&(len(keys)-1)], fp)
			if i++; i&(len(keys)-1) == 0 {
				ex, _ = idem.New(newStore())
			}
			if r, err := ex.Do(ctx, req, action); err != nil || r.Kind != idem.ResultExecuted {
				b.Fatal(r.Kind, err)
			}
		}
	})
	m := newStore()
	ex, _ := idem.New(m)
	req := request(keys[0], fp)
	if _, err := ex.Do(ctx, req, action); err != nil {
		b.Fatal(err)
	}
	b.Run("replay/store-load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if snap, err := m.Load(ctx, req.Scope); err != nil || snap.Record.Status != core.StatusCompleted {
				b.Fatal(err)
			}
		}
	})
	// The request's checks alone (SPEC §3), the part of the floor below that
	// is not the store's.
	b.Run("replay/validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := req.Validate(&p); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The floor of a replay through any executor: the request's checks
	// (SPEC §3) and one event stepped through the core over the store.
	b.Run("replay/floor", func(b *testing.B) {
		var a store.Applied
		b.ReportAllocs()
		for b.Loop() {
			if err := req.Validate(&p); err != nil {
				b.Fatal(err)
			}
			if err := store.Apply(ctx, m, req.Scope, core.Event{Kind: core.EventReserve, Fingerprint: fp}, &p, &a); err != nil || a.Transition.Decision.Kind != core.DecisionReplay {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay/do", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r, err := ex.Do(ctx, req, action); err != nil || r.Kind != idem.ResultReplayed {
				b.Fatal(r.Kind, err)
			}
		}
	})
}

// BenchmarkReplayRatio measures the replay target of BENCHMARKS.md on a
// shared, noisy machine: each iteration times a batch of bare Loads, a
// batch of floors (the request's checks and one stepped Reserve: what any
// executor must do), a batch of stepped Reserves alone and a batch of Do
// replays, one right after the other,
// so that a load spike from elsewhere weighs on all of them alike. It
// reports the ratios of the sums: do/load (the target: at most 1.3),
// floor/load (the best any Do could reach), do/floor (Do's own cost), and
// step/load: one stepped Reserve without the request's checks, the floor of
// any design that lets the core decide a replay (the checks skipped, or
// moved into the store's insert).
func BenchmarkReplayRatio(b *testing.B) {
	const batch = 256
	ctx := context.Background()
	fp, _, action, keys := benchFixture()
	p := idem.PolicyDefault()
	m := memstore.New(memstore.Options{})
	ex, _ := idem.New(m)
	req := request(keys[0], fp)
	if _, err := ex.Do(ctx, req, action); err != nil {
		b.Fatal(err)
	}
	var a store.Applied
	var load, floor, step, do time.Duration
	for b.Loop() {
		start := time.Now()
		for range batch {
			if snap, err := m.Load(ctx, req.Scope); err != nil || snap.Record.Status != core.StatusCompleted {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for range batch {
			if err := req.Validate(&p); err != nil {
				b.Fatal(err)
			}
			if err := store.Apply(ctx, m, req.Scope, core.Event{Kind: core.EventReserve, Fingerprint: fp}, &p, &a); err != nil || a.Transition.Decision.Kind != core.DecisionReplay {
				b.Fatal(err)
			}
		}
		t2 := time.Now()
		for range batch {
			if err := store.Apply(ctx, m, req.Scope, core.Event{Kind: core.EventReserve, Fingerprint: fp}, &p, &a); err != nil || a.Transition.Decision.Kind != core.DecisionReplay {
				b.Fatal(err)
			}
		}
		t3 := time.Now()
		for range batch {
			if r, err := ex.Do(ctx, req, action); err != nil || r.Kind != idem.ResultReplayed {
				b.Fatal(r.Kind, err)
			}
		}
		t4 := time.Now()
		load, floor, step, do = load+t1.Sub(start), floor+t2.Sub(t1), step+t3.Sub(t2), do+t4.Sub(t3)
	}
	b.ReportMetric(float64(do)/float64(load), "do/load")
	b.ReportMetric(float64(floor)/float64(load), "floor/load")
	b.ReportMetric(float64(do)/float64(floor), "do/floor")
	b.ReportMetric(float64(step)/float64(load), "step/load")
	b.ReportMetric(float64(load.Nanoseconds())/float64(b.N*batch), "load-ns")
}

// benchFixture is what the Do benchmarks send: a fingerprint, the
// response the action returns, the action, and 65,536 distinct keys.
func benchFixture() (idem.Fingerprint, idem.Response, idem.Action, []string) {
	fp := idem.Fingerprint(sha256.Sum256([]byte(`{"amount":100}`)))
	resp := idem.Response{StatusCode: 201, Body: []byte(`{"paymentId":"p-1"}`), SchemaVersion: 1}
	action := func(context.Context, idem.Attempt) (idem.Response, error) { return resp, nil }
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = "550e8400-e29b-41d4-" + strconv.FormatInt(int64(1<<40+i), 16)
	}
	return fp, resp, action, keys
}
