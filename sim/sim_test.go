package sim

import (
	"testing"
)

func TestSmoke(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := DefaultConfig()
		cfg.Seed = seed
		r, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: req=%d done=%d exec=%d charges=%d replays=%d 409=%d 422=%d 503=%d 5xx=%d conv=%v max=%v vt=%v events=%d", seed, r.Requests, r.Done, r.Executions, r.Charges, r.Replays, r.Status409, r.Status422, r.Status503, r.Status5xx, r.Converged, r.ConvergeMax, r.VirtualTime, len(r.Events))
		for _, v := range r.Violations {
			t.Errorf("violation %d %s %s: %s", v.Invariant, v.Name, v.Scope, v.Detail)
			for _, e := range v.Events {
				t.Log(e)
			}
		}
	}
}
