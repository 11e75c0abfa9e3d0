package sim

import (
	"testing"
)

// TestLive runs the workload through Executor.Do itself, in real time, with
// the simulator's checkers: every invariant holds, and what Do does that the
// step-by-step Flow does not (its heartbeat, its in-flight wait, its
// detached completion) took part.
func TestLive(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := DefaultConfig()
		cfg.Seed, cfg.Requests, cfg.Clients = seed, 120, 12
		if seed == 3 { // every fault at once, not a swarm's draw
			cfg = allFaultsAt(0.05)
			cfg.Seed, cfg.Requests, cfg.Clients = seed, 120, 12
		}
		r, err := RunLive(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range r.Violations {
			t.Fatalf("seed %d: invariant %d (%s) in %s: %s", seed, v.Invariant, v.Name, v.Scope, v.Detail)
		}
		if r.Done < r.Requests-r.Abandoned || r.Executions == 0 || r.Replays+r.Status409+r.Status202 == 0 {
			t.Fatalf("seed %d: %+v", seed, r.Tally)
		}
		t.Logf("seed %d: %+v", seed, r.Tally)
	}
}

// TestLiveCatchesCorruptReplays: the live harness's checkers catch a
// planted bug, as the simulator's do.
func TestLiveCatchesCorruptReplays(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Requests, cfg.Clients = 60, 6
	cfg = cfg.scaled(LiveScale)
	l := newLive(cfg)
	l.corruptReplays = true
	l.run()
	if len(l.w.report.Violations) == 0 || l.w.report.Violations[0].Invariant != 2 {
		t.Fatalf("a replay one byte off passed: %+v", l.w.report.Violations)
	}
}
