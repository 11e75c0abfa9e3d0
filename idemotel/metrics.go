package idemotel

import (
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/idemkit/idem"
)

// instrumentationName names the meter and the tracer idem's instruments
// and spans come from.
const instrumentationName = "github.com/idemkit/idem"

// The attributes of idem's instruments and spans.
const (
	attrUseCase  = attribute.Key("idem.use_case")
	attrEvent    = attribute.Key("idem.event")
	attrDecision = attribute.Key("idem.decision")
)

// Metrics records idem's counters and histograms as OpenTelemetry
// instruments: give it to idem.WithMetrics. It is an idem.Metrics and an
// idem.Distributions, safe for concurrent use.
type Metrics struct {
	counters   []metric.Int64Counter     // by idem.Counter
	histograms []metric.Float64Histogram // by idem.Histogram
	// The attribute set of each label set seen, made once: labels are
	// bounded, and an attribute set costs allocations to build.
	attrs sync.Map // idem.Labels -> metric.MeasurementOption
}

// NewMetrics makes the instruments of every counter and histogram from mp's
// meter for idem.
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		return nil, fmt.Errorf("idemotel: NewMetrics: nil meter provider")
	}
	meter := mp.Meter(instrumentationName)
	m := &Metrics{}
	for _, c := range idem.Counters() {
		ctr, err := meter.Int64Counter(c.Name(), metric.WithUnit("{event}"), metric.WithDescription(counterDescriptions[c]))
		if err != nil {
			return nil, fmt.Errorf("idemotel: counter %s: %w", c.Name(), err)
		}
		m.counters = append(m.counters, ctr)
	}
	for _, h := range idem.Histograms() {
		hist, err := meter.Float64Histogram(h.Name(), metric.WithUnit(h.Unit()), metric.WithDescription(histogramDescriptions[h]),
			metric.WithExplicitBucketBoundaries(bucketsOf(h)...))
		if err != nil {
			return nil, fmt.Errorf("idemotel: histogram %s: %w", h.Name(), err)
		}
		m.histograms = append(m.histograms, hist)
	}
	return m, nil
}

// Add adds n to counter c under labels l.
func (m *Metrics) Add(c idem.Counter, l idem.Labels, n uint64) {
	if !c.Valid() || int(c) >= len(m.counters) {
		return
	}
	m.counters[c].Add(bg, int64(min(n, 1<<63-1)), m.attributes(l))
}

// Record records v for histogram h under labels l.
func (m *Metrics) Record(h idem.Histogram, l idem.Labels, v float64) {
	if !h.Valid() || int(h) >= len(m.histograms) {
		return
	}
	m.histograms[h].Record(bg, v, m.attributes(l))
}

// attributes is l as a measurement option: the use case, and the event and
// the decision where there is one.
func (m *Metrics) attributes(l idem.Labels) metric.MeasurementOption {
	if o, ok := m.attrs.Load(l); ok {
		return o.(metric.MeasurementOption)
	}
	kvs := make([]attribute.KeyValue, 0, 3)
	kvs = append(kvs, attrUseCase.String(l.UseCase))
	if l.Event != "" {
		kvs = append(kvs, attrEvent.String(l.Event))
	}
	if l.Decision != "" {
		kvs = append(kvs, attrDecision.String(l.Decision))
	}
	o, _ := m.attrs.LoadOrStore(l, metric.WithAttributeSet(attribute.NewSet(kvs...)))
	return o.(metric.MeasurementOption)
}

// bucketsOf is h's bucket boundaries: from 5 ms to an hour for times (an
// attempt, a wait or a reconcile may take from milliseconds to the
// reconciler's longest backoff), from 64 B to 1 MiB for sizes (the
// default response limit).
func bucketsOf(h idem.Histogram) []float64 {
	if h == idem.HistogramResponseSize {
		return []float64{64, 256, 1024, 4096, 16384, 65536, 262144, 1048576}
	}
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
}
