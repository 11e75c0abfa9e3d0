package sim

import "testing"

// BenchmarkRun measures whole seeds of the default settings (200 requests
// each, every fault on in swarm mode); requests/s is the simulated rate.
func BenchmarkRun(b *testing.B) {
	cfg := DefaultConfig()
	requests := 0
	seed := uint64(1)
	for b.Loop() {
		cfg.Seed = seed
		seed++
		r := run(cfg, false) // as simrun runs many seeds: no trace
		if len(r.Violations) > 0 {
			b.Fatal(r.Violations)
		}
		requests += r.Requests
	}
	b.ReportMetric(float64(requests)/b.Elapsed().Seconds(), "requests/s")
}
