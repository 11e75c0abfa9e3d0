package sim

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// RunSeeds runs n consecutive seeds from cfg.Seed on workers goroutines (the
// number of CPUs if workers < 1) and returns the reports in seed order.
// progress, if not nil, is called after each seed with the number done.
// No report keeps its trace: a trace is megabytes, and a seed run again
// gives the same one.
func RunSeeds(cfg Config, n, workers int, progress func(done int)) ([]*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	reports := make([]*Report, n)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sp spare // each seed runs in the memory of the one before
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				c := cfg
				c.Seed = cfg.Seed + uint64(i)
				r := runFrom(c, false, &sp)
				r.Events, r.Scopes = nil, nil
				reports[i] = r
				if progress != nil {
					progress(int(done.Add(1)))
				}
			}
		}()
	}
	wg.Wait()
	return reports, nil
}
