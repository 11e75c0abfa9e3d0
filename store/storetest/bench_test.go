package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idem/linearizability"

	"github.com/anishathalye/porcupine"
	memstore "github.com/idemkit/idem/store/mem"
)

// The benchmark histories: 100,000 operations over 10,000 scopes, recorded
// from real operations on the memory store by 4 goroutines, which go through
// the scopes 10 at a time (1,000 windows).
const (
	benchOps        = 100_000
	benchWindow     = 10
	benchWindows    = 1_000
	benchGoroutines = 4
)

var bench struct {
	once sync.Once
	out  [2]*historyOut
}

func benchHistories(b *testing.B) [2]*historyOut {
	bench.once.Do(func() {
		cfg := defaults()
		cfg.seed, cfg.scopes, cfg.goroutines, cfg.operations = 1, benchWindow, benchGoroutines, benchOps
		for i, f := range []stressFunc{stressStore, stressLifecycle} {
			spec := newHistorySpec(&cfg, "bench", 0, benchWindows)
			spec.quick = true
			out, err := f(context.Background(), memstore.New(memstore.Options{}), spec)
			if err != nil {
				b.Fatal(err)
			}
			bench.out[i] = out
		}
	})
	return bench.out
}

// BenchmarkCheckStoreHistory checks a 100,000-operation store history over
// 10,000 scopes (goal: under 2 s per check).
func BenchmarkCheckStoreHistory(b *testing.B) {
	h := benchHistories(b)[0].store
	var r linearizability.Report
	for b.Loop() {
		r = linearizability.CheckStoreHistory(h, linearizability.CheckOptions{Timeout: time.Minute})
		if r.Check != porcupine.Ok {
			b.Fatal(r)
		}
	}
	b.ReportMetric(float64(r.Operations), "operations")
	b.ReportMetric(float64(r.Scopes), "scopes")
}

// BenchmarkCheckLifecycleHistory checks a 100,000-event lifecycle history
// over 10,000 scopes, each event replayed through core.Step.
func BenchmarkCheckLifecycleHistory(b *testing.B) {
	out := benchHistories(b)[1]
	var r linearizability.Report
	for b.Loop() {
		r = linearizability.CheckLifecycleHistory(out.life, out.policy, linearizability.CheckOptions{Timeout: time.Minute})
		if r.Check != porcupine.Ok {
			b.Fatal(r)
		}
	}
	b.ReportMetric(float64(r.Operations), "operations")
	b.ReportMetric(float64(r.Scopes), "scopes")
}
