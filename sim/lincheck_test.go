package sim

import (
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	"github.com/idemkit/idem/store"
)

// TestLinCheck: with -lincheck the run's store history is checked and
// found linearizable, store faults (ambiguous commits) included, on both
// store paths (an Apply is one operation, a load and a write two).
func TestLinCheck(t *testing.T) {
	for _, path := range []StorePath{StorePathCompareAndSet, StorePathApply} {
		cfg := allFaultsAt(0.05)
		cfg.LinCheck = true
		cfg.StorePath = path
		for seed := uint64(1); seed <= 10; seed++ {
			cfg.Seed = seed
			r, err := Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range r.Violations {
				t.Fatalf("%v seed %d: invariant %d (%s): %s", path, seed, v.Invariant, v.Name, v.Detail)
			}
			if r.LinChecked < 500 {
				t.Fatalf("%v seed %d: only %d operations checked", path, seed, r.LinChecked)
			}
		}
	}
}

// TestLinCheckCatchesABrokenStore: a load that returns a version of the
// record no write ever made is caught.
func TestLinCheckCatchesABrokenStore(t *testing.T) {
	cfg := ConfigDefault()
	cfg.LinCheck = true
	cfg.Faults = 0
	cfg.StorePath = StorePathCompareAndSet
	w := newWorld(cfg, true)
	w.start()
	w.loop()
	planted := false
	for i := range w.lin {
		op := &w.lin[i]
		if op.Kind == store.MethodLoad && op.Ended == linearizability.EndedOK && op.Record.Exists() {
			op.Record.Version += 7
			planted = true
			break
		}
	}
	if !planted {
		t.Fatal("no load to plant a wrong read in")
	}
	w.finish()
	if len(w.report.Violations) == 0 || w.report.Violations[0].Invariant != 0 {
		t.Fatalf("a planted lost write passed: %+v", w.report.Violations)
	}
	t.Log(w.report.Violations[0].Detail)
}

// TestLinCheckCatchesABrokenApply: on the fast path, an Apply whose record
// is not what core.Step makes of the one before it is caught.
func TestLinCheckCatchesABrokenApply(t *testing.T) {
	cfg := ConfigDefault()
	cfg.LinCheck = true
	cfg.Faults = 0
	cfg.StorePath = StorePathApply
	w := newWorld(cfg, true)
	w.start()
	w.loop()
	if len(w.lin) != 0 {
		t.Fatalf("%d load or write operations on the fast path", len(w.lin))
	}
	planted := false
	for i := range w.linLife {
		op := &w.linLife[i]
		if op.Ended == linearizability.EndedOK && op.Transition.Decision.Kind == core.DecisionCompleted {
			op.Record.Response.StatusCode++
			planted = true
			break
		}
	}
	if !planted {
		t.Fatal("no completion to plant a wrong write in")
	}
	w.finish()
	if len(w.report.Violations) == 0 || w.report.Violations[0].Invariant != 0 {
		t.Fatalf("a planted wrong write passed: %+v", w.report.Violations)
	}
	t.Log(w.report.Violations[0].Detail)
}
