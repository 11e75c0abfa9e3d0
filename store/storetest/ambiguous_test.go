package storetest

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// faulty injects the store faults of SPEC §8 around a correct store: writes
// that fail before they apply, and writes that apply and then report an
// error (an ambiguous commit), so that the ambiguity model is checked
// against what really happened.
type faulty struct {
	store.Store
	mu  sync.Mutex
	rng *rand.Rand
	n   atomic.Int64
}

var errInjected = errors.New("injected store fault")

// fault is 0 (none), 1 (fail before applying) or 2 (apply, then fail).
func (f *faulty) fault() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r := f.rng.IntN(100); {
	case r < 5:
		f.n.Add(1)
		return 1
	case r < 10:
		f.n.Add(1)
		return 2
	}
	return 0
}

func (f *faulty) write(do func() error) error {
	switch f.fault() {
	case 1:
		return errInjected
	case 2:
		if err := do(); err != nil {
			return err
		}
		return errInjected
	}
	return do()
}

func (f *faulty) Insert(ctx context.Context, rec *core.Record) error {
	return f.write(func() error { return f.Store.Insert(ctx, rec) })
}

func (f *faulty) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, tok core.Token) error {
	return f.write(func() error { return f.Store.CompareAndSet(ctx, rec, v, tok) })
}

func (f *faulty) Delete(ctx context.Context, sc core.Scope, v uint64, tok core.Token) error {
	return f.write(func() error { return f.Store.Delete(ctx, sc, v, tok) })
}

// faultyApplier also fails Apply before or after it applies.
type faultyApplier struct{ *faulty }

func (f faultyApplier) Apply(ctx context.Context, sc core.Scope, ev core.Event, p *core.Policy, a *store.Applied) error {
	return f.write(func() error { return f.Store.(store.Applier).Apply(ctx, sc, ev, p, a) })
}

// TestAmbiguousCommitsAreLinearizable runs the stresses over a correct
// store that fails writes before and after they apply: every history must
// still be Ok, through each way of recording ambiguity.
func TestAmbiguousCommitsAreLinearizable(t *testing.T) {
	cfg := defaults()
	cfg.seed = randomSeed()
	t.Logf("seed %d", cfg.seed)
	for _, c := range []struct {
		name    string
		f       stressFunc
		applier bool // through the memory store's Apply, which fails too
	}{
		{"store", stressStore, false},
		{"lifecycle-compare-and-set", stressLifecycle, false},
		{"lifecycle-apply", stressLifecycle, true},
		{"executor-compare-and-set", stressExecutor, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &faulty{Store: store.HideApplier(memstore.New(memstore.Options{})), rng: rand.New(rand.NewPCG(cfg.seed, 1))}
			var s store.Store = f
			if c.applier {
				f.Store = memstore.New(memstore.Options{})
				s = faultyApplier{f}
			}
			unknown := 0
			for h := range 10 {
				out, err := c.f(context.Background(), s, newHistorySpec(&cfg, c.name, h, 2))
				if err != nil {
					t.Fatal(err)
				}
				for _, op := range out.store {
					if op.Ended == linearizability.EndedIndeterminate {
						unknown++
					}
				}
				for _, op := range out.life {
					if op.Ended == linearizability.EndedIndeterminate {
						unknown++
					}
				}
				opts := linearizability.CheckOptions{Timeout: 20 * time.Second, VisualizationDir: t.TempDir(), Name: c.name}
				if len(out.store) > 0 {
					if r := linearizability.CheckStoreHistory(out.store, opts); !r.OK() {
						t.Fatalf("history %d: store: %v", h, r)
					}
				}
				if len(out.life) > 0 {
					if r := linearizability.CheckLifecycleHistory(out.life, out.policy, opts); !r.OK() {
						t.Fatalf("history %d: lifecycle: %v", h, r)
					}
				}
			}
			if f.n.Load() == 0 || unknown == 0 {
				t.Fatalf("%d faults injected, %d ambiguous operations recorded: the test tested nothing", f.n.Load(), unknown)
			}
			t.Logf("%d faults injected, %d ambiguous operations checked", f.n.Load(), unknown)
		})
	}
}
