package memstore_test

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// sweepRecords is how many records the sweep benchmarks preload, all past
// their TTL (IDEM_BENCH_SWEEP_RECORDS overrides the 1,000,000).
func sweepRecords() int {
	if n, err := strconv.Atoi(os.Getenv("IDEM_BENCH_SWEEP_RECORDS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// preloadExpired fills a store with n completed records whose TTL has
// passed at now.
func preloadExpired(b *testing.B, n int, now time.Time) *memstore.Store {
	m := memstore.New(memstore.Options{Clock: func() time.Time { return now }})
	ctx := context.Background()
	for i := range n {
		sc := scopeN(i)
		snap, _ := m.Load(ctx, sc)
		rec := core.Record{Scope: sc, Status: core.StatusCompleted, Fingerprint: fp, Token: snap.FreshToken, Version: 2,
			Response: response(i), CreatedAt: now.Add(-25 * time.Hour), CompletedAt: now.Add(-25 * time.Hour), ExpiresAt: now.Add(-time.Hour + time.Duration(i))}
		if err := m.Insert(ctx, &rec); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

// BenchmarkSweepBatch is one batch of 100 of a sweeper over a store where
// every one of a million records is due: list them (Due) and expire each.
// A batch must cost about the batch, not the store.
func BenchmarkSweepBatch(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	n := sweepRecords()
	m := preloadExpired(b, n, now)
	p := idem.PolicyDefault()
	ctx := context.Background()
	var a store.Applied
	swept := 0
	b.ReportAllocs()
	for b.Loop() {
		recs, err := m.Due(ctx, store.DueSweep, 100)
		if err != nil || len(recs) != 100 {
			b.Fatalf("%d due: %v", len(recs), err)
		}
		for i := range recs {
			if err := store.Apply(ctx, m, recs[i].Scope, core.Event{Kind: core.EventSweep}, &p, &a); err != nil || a.Transition.Decision.Kind != core.DecisionExpired {
				b.Fatal(err, a.Transition.Decision.Kind)
			}
		}
		if swept += len(recs); swept > n-200 {
			b.StopTimer()
			m, swept = preloadExpired(b, n, now), 0
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(n), "records")
}

// BenchmarkDoBesideSweep is Do on new keys while a sweeper clears a million
// due records beside it: the longest a Do waited is its stall-max metric.
func BenchmarkDoBesideSweep(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	m := preloadExpired(b, sweepRecords(), now)
	ex, err := idem.New(m)
	if err != nil {
		b.Fatal(err)
	}
	sweeper, _ := ex.Sweeper(idem.WithBatchSize(100))
	ctx, stop := context.WithCancel(context.Background())
	if _, err := m.Due(ctx, store.DueSweep, 1); err != nil { // the index takes in the preload once, before the clock runs
		b.Fatal(err)
	}
	var batches atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if _, err := sweeper.RunOnce(ctx); err != nil && ctx.Err() == nil {
				panic(err)
			}
			batches.Add(1)
		}
	}()
	action := func(context.Context, idem.Attempt) (idem.Response, error) { return response(1), nil }
	var worst time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, err := ex.Do(context.Background(), idem.Request{Scope: scopeN(2_000_000 + i), Fingerprint: fp}, action); err != nil {
			b.Fatal(err)
		}
		worst = max(worst, time.Since(start))
		i++
	}
	stop()
	<-done
	b.ReportMetric(float64(worst.Nanoseconds()), "stall-max-ns")
	b.ReportMetric(float64(batches.Load()), "sweep-batches")
}
