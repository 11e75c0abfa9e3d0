package idem

import (
	"sort"
	"sync"
)

// MetricsMem keeps counts in memory: for tests, the simulator and small
// deployments that export them by hand.
type MetricsMem struct {
	mu    sync.Mutex
	byLbl map[labelled]uint64
}

type labelled struct {
	c Counter
	l Labels
}

// Add counts n for c and l.
func (m *MetricsMem) Add(c Counter, l Labels, n uint64) {
	if !c.Valid() {
		return
	}
	m.mu.Lock()
	if m.byLbl == nil {
		m.byLbl = map[labelled]uint64{}
	}
	m.byLbl[labelled{c, l}] += n
	m.mu.Unlock()
}

// Total is the sum of c over every label.
func (m *MetricsMem) Total(c Counter) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n uint64
	for k, v := range m.byLbl {
		if k.c == c {
			n += v
		}
	}
	return n
}

// Count is c for exactly the labels l.
func (m *MetricsMem) Count(c Counter, l Labels) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byLbl[labelled{c, l}]
}

// Labels lists every label set seen for c, sorted.
func (m *MetricsMem) Labels(c Counter) []Labels {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ls []Labels
	for k := range m.byLbl {
		if k.c == c {
			ls = append(ls, k.l)
		}
	}
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].UseCase != ls[j].UseCase {
			return ls[i].UseCase < ls[j].UseCase
		}
		if ls[i].Event != ls[j].Event {
			return ls[i].Event < ls[j].Event
		}
		return ls[i].Decision < ls[j].Decision
	})
	return ls
}
