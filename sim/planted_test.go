package sim

import "testing"

// TestCheckersCatchPlantedBugs plants, one at a time, a bug that only a
// given checker can see, and expects that checker to report it: a checker
// that never fires proves nothing. (Invariants 1, 3, 4 and 7 are shown by
// the baselines, and linearizability by TestLinCheckCatchesABrokenStore.)
func TestCheckersCatchPlantedBugs(t *testing.T) {
	for _, c := range []struct {
		invariant int
		plant     plantedBugs
	}{
		{2, plantedBugs{corruptReplays: true}},
		{5, plantedBugs{neverReconcile: true}},
		{6, plantedBugs{clientsGiveUp: true}},
	} {
		caught := false
		for seed := uint64(1); seed <= 50 && !caught; seed++ {
			cfg := ConfigDefault()
			cfg.Seed = seed
			for _, v := range runPlanted(cfg, c.plant) {
				if v.Invariant == c.invariant {
					caught = true
					t.Logf("invariant %d caught at seed %d: %s", c.invariant, seed, v.Detail)
				} else {
					t.Fatalf("planted %+v: seed %d broke invariant %d instead: %s", c.plant, seed, v.Invariant, v.Detail)
				}
			}
		}
		if !caught {
			t.Errorf("planted %+v: invariant %d never reported in 50 seeds", c.plant, c.invariant)
		}
	}
}
