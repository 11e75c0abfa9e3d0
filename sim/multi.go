package sim

import (
	"container/heap"
	"runtime"
	"slices"
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
	tail := newConvergeTail(n * cfg.Requests)
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
				tail.trim(r)
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

// convergeTail keeps the seeds' reports from holding every request's time
// to converge: ten million of them (sim-long) were 80 MB that grew all run,
// and the collection target grew with them until the heap outgrew the
// caches (1,000 seeds took 20 % longer at the end of the run than at its
// start). The summary needs only the maximum and the 99th percentile, and
// at most count/100 + 1 times lie at or above the percentile of count: the
// tail holds the k largest seen so far, and a report keeps only its times
// at or above the smallest of them, which no later seed can make matter.
type convergeTail struct {
	mu  sync.Mutex
	k   int
	top int64Heap // the k largest times so far; top[0] the smallest of them
}

// newConvergeTail is the tail of a run of at most count times.
func newConvergeTail(count int) *convergeTail { return &convergeTail{k: count/100 + 1} }

// trim adds r's times to the tail and drops from r those below it.
func (t *convergeTail) trim(r *Report) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(r.converge) - 1; i >= 0; i-- { // largest first: stop at the first that cannot enter
		v := r.converge[i]
		if len(t.top) < t.k {
			heap.Push(&t.top, v)
			continue
		}
		if v <= t.top[0] {
			break
		}
		t.top[0] = v
		heap.Fix(&t.top, 0)
	}
	if len(t.top) == t.k {
		from, _ := slices.BinarySearch(r.converge, t.top[0]) // the first at or above the tail's smallest
		r.converge = slices.Clone(r.converge[from:])
	}
}

// int64Heap is a min-heap of int64 (container/heap).
type int64Heap []int64

func (h int64Heap) Len() int           { return len(h) }
func (h int64Heap) Less(i, j int) bool { return h[i] < h[j] }
func (h int64Heap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *int64Heap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *int64Heap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
