package idem

import (
	"sort"
	"sync"
)

// MetricsMem keeps counts, and a Summary of each histogram, in memory: for
// tests and small deployments that export them by hand.
type MetricsMem struct {
	mu     sync.Mutex
	byLbl  map[labelled]uint64
	byHist map[histogrammed]Summary
}

type labelled struct {
	c Counter
	l Labels
}

type histogrammed struct {
	h Histogram
	l Labels
}

// Summary is what MetricsMem keeps of a histogram's values for one label
// set.
type Summary struct {
	Count    uint64
	Sum      float64
	Min, Max float64
}

// Record adds v to h's summary for l (MetricsMem is a Distributions).
func (m *MetricsMem) Record(h Histogram, l Labels, v float64) {
	if !h.Valid() {
		return
	}
	m.mu.Lock()
	if m.byHist == nil {
		m.byHist = map[histogrammed]Summary{}
	}
	k := histogrammed{h, l}
	s := m.byHist[k]
	if s.Count == 0 || v < s.Min {
		s.Min = v
	}
	if s.Count == 0 || v > s.Max {
		s.Max = v
	}
	s.Count++
	s.Sum += v
	m.byHist[k] = s
	m.mu.Unlock()
}

// Summary is h's summary for exactly the labels l.
func (m *MetricsMem) Summary(h Histogram, l Labels) Summary {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byHist[histogrammed{h, l}]
}

// HistogramLabels lists every label set recorded for h, sorted.
func (m *MetricsMem) HistogramLabels(h Histogram) []Labels {
	m.mu.Lock()
	defer m.mu.Unlock()
	return labelsOf(m.byHist, func(k histogrammed) (Labels, bool) { return k.l, k.h == h })
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
	return labelsOf(m.byLbl, func(k labelled) (Labels, bool) { return k.l, k.c == c })
}

// labelsOf lists, sorted, the labels of the keys of m that of says are
// its.
func labelsOf[K comparable, V any](m map[K]V, of func(K) (Labels, bool)) []Labels {
	var ls []Labels
	for k := range m {
		if l, ok := of(k); ok {
			ls = append(ls, l)
		}
	}
	sortLabels(ls)
	return ls
}

func sortLabels(ls []Labels) {
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].UseCase != ls[j].UseCase {
			return ls[i].UseCase < ls[j].UseCase
		}
		if ls[i].Event != ls[j].Event {
			return ls[i].Event < ls[j].Event
		}
		return ls[i].Decision < ls[j].Decision
	})
}
