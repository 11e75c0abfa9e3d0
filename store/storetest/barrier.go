package storetest

import "sync"

// goAll runs f for each of n goroutines, released together. Each calls
// round before each operation: a barrier that releases all the goroutines
// at once, so that their operations meet on the same scopes at the same
// instant, on every core.
func goAll(n int, f func(g int, round func())) {
	b := &barrier{parties: n}
	b.cond = sync.NewCond(&b.mu)
	var wg sync.WaitGroup
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer b.leave()
			f(g, b.wait)
		}()
	}
	wg.Wait()
}

// barrier is a reusable barrier whose goroutines may leave it.
type barrier struct {
	mu      sync.Mutex
	cond    *sync.Cond
	parties int
	arrived int
	gen     uint64
}

func (b *barrier) wait() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.arrived++
	if b.arrived >= b.parties {
		b.next()
		return
	}
	for gen := b.gen; gen == b.gen; {
		b.cond.Wait()
	}
}

func (b *barrier) leave() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.parties--
	if b.parties > 0 && b.arrived >= b.parties {
		b.next()
	}
}

func (b *barrier) next() {
	b.arrived = 0
	b.gen++
	b.cond.Broadcast()
}
