package sim

import (
	"fmt"
	"testing"
)

// BenchmarkRun measures whole seeds of the default settings (every fault on
// in swarm mode), with the default 200 requests a seed and with the 1000 of
// the recorded ten-million-request run; requests/s is the simulated rate.
func BenchmarkRun(b *testing.B) {
	for _, requests := range []int{200, 1000} {
		b.Run(fmt.Sprintf("requests=%d", requests), func(b *testing.B) {
			cfg := ConfigDefault()
			cfg.Requests = requests
			cfg.LinCheck = false // the simulator alone; -lincheck has its own cost (BENCHMARKS.md)
			total := 0
			seed := uint64(1)
			var sp spare
			for b.Loop() {
				cfg.Seed = seed
				seed++
				r := runFrom(cfg, false, &sp) // as simrun runs many seeds: no trace, each in the memory of the one before
				if len(r.Violations) > 0 {
					b.Fatal(r.Violations)
				}
				total += r.Requests
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "requests/s")
		})
	}
}
