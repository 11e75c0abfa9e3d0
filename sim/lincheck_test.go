package sim

import (
	"testing"

	"github.com/idemkit/idem/linearizability"
)

// TestLinCheck: with -lincheck the run's store history is checked and
// found linearizable, store faults (ambiguous commits) included.
func TestLinCheck(t *testing.T) {
	cfg := allFaultsAt(0.05)
	cfg.LinCheck = true
	for seed := uint64(1); seed <= 10; seed++ {
		cfg.Seed = seed
		r, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range r.Violations {
			t.Fatalf("seed %d: invariant %d (%s): %s", seed, v.Invariant, v.Name, v.Detail)
		}
		if r.LinChecked < 1000 {
			t.Fatalf("seed %d: only %d operations checked", seed, r.LinChecked)
		}
	}
}

// TestLinCheckCatchesABrokenStore: a load that returns a version of the
// record no write ever made is caught.
func TestLinCheckCatchesABrokenStore(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LinCheck = true
	cfg.Faults = 0
	w := newWorld(cfg, true)
	w.start()
	w.loop()
	planted := false
	for i := range w.lin {
		op := &w.lin[i]
		if op.Kind == linearizability.StoreLoad && op.Outcome == linearizability.OutcomeOK && op.Record.Exists() {
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
