package idemotel_test

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemkit/idem"
)

// boundedKeys are the only attribute keys an instrument may carry.
var boundedKeys = map[attribute.Key]bool{"idem.use_case": true, "idem.event": true, "idem.decision": true}

// sumOf is counter name's total over the points whose attributes include
// want, and every point's attributes are checked to be bounded.
func sumOf(t *testing.T, ms map[string]metricdata.Metrics, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok || !sum.IsMonotonic {
		t.Fatalf("%s is %T, want a monotonic Int64 sum", name, m.Data)
	}
	var n int64
	for _, p := range sum.DataPoints {
		checkBounded(t, name, p.Attributes)
		if has(p.Attributes, want...) {
			n += p.Value
		}
	}
	return n
}

func checkBounded(t *testing.T, where string, set attribute.Set) {
	t.Helper()
	for _, kv := range set.ToSlice() {
		if !boundedKeys[kv.Key] {
			t.Errorf("%s carries attribute %s", where, kv.Key)
		}
		noIdentity(t, where, kv.Value.String())
	}
}

func has(set attribute.Set, want ...attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// histogramOf is histogram name's points whose attributes include want.
func histogramOf(t *testing.T, ms map[string]metricdata.Metrics, name string, want ...attribute.KeyValue) (count uint64, sum float64) {
	t.Helper()
	h, ok := ms[name].Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is %T, want a Float64 histogram", name, ms[name].Data)
	}
	for _, p := range h.DataPoints {
		checkBounded(t, name, p.Attributes)
		if has(p.Attributes, want...) {
			count, sum = count+p.Count, sum+p.Sum
		}
	}
	return count, sum
}

var uc = attribute.String("idem.use_case", useCase)

// TestEndToEndMetrics: an executed request, a replay, a mismatch and an
// unknown the reconciler settles each show in their instruments, with the
// bounded labels only.
func TestEndToEndMetrics(t *testing.T) {
	w := newWorld(t)
	w.run(t)
	ms := w.collect(t)
	for name, want := range map[string]int64{
		"api.idempotency.reserve.created.count":     2,
		"api.idempotency.reserve.replay.count":      1,
		"api.idempotency.reserve.key_misuse.count":  1,
		"api.idempotency.reconcile.scheduled.count": 1,
		"api.idempotency.reconcile.resolved.count":  1,
		"api.idempotency.store.error.count":         0,
	} {
		if got := sumOf(t, ms, name, uc); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if n := sumOf(t, ms, "api.idempotency.reserve.replay.count", uc, attribute.String("idem.event", "reserve"), attribute.String("idem.decision", "replay")); n != 1 {
		t.Errorf("the replay's labels: %d points match", n)
	}
	if n, s := histogramOf(t, ms, "api.idempotency.attempt.duration", uc, attribute.String("idem.decision", "completed")); n != 1 || s != 1 {
		t.Errorf("attempt.duration of the executed request: %d values, sum %v s; want one of 1 s", n, s)
	}
	if n, _ := histogramOf(t, ms, "api.idempotency.attempt.duration", uc, attribute.String("idem.decision", "marked_unknown")); n != 1 {
		t.Errorf("attempt.duration of the unknown: %d values", n)
	}
	if n, s := histogramOf(t, ms, "api.idempotency.response.size", uc); n != 2 || s != float64(2*len(created.Body)) {
		t.Errorf("response.size: %d values, sum %v; want the executed one's and the finding's", n, s)
	}
	if n, s := histogramOf(t, ms, "api.idempotency.reconcile.duration", uc, attribute.String("idem.decision", "resolved")); n != 1 || s <= 0 {
		t.Errorf("reconcile.duration: %d values, sum %v", n, s)
	}
}

// TestEveryInstrument: every counter and histogram is made with its name,
// unit and description, and records under the bounded labels.
func TestEveryInstrument(t *testing.T) {
	w := newWorld(t)
	l := idem.Labels{UseCase: useCase, Event: "reserve", Decision: "execute"}
	for _, c := range idem.Counters() {
		w.metrics.Add(c, l, 2)
	}
	for _, h := range idem.Histograms() {
		w.metrics.Record(h, l, 3)
	}
	w.metrics.Add(idem.Counter(200), l, 1) // not a counter: ignored, no panic
	w.metrics.Record(idem.Histogram(200), l, 1)
	ms := w.collect(t)
	if len(ms) != len(idem.Counters())+len(idem.Histograms()) {
		t.Errorf("%d instruments, want %d", len(ms), len(idem.Counters())+len(idem.Histograms()))
	}
	for _, c := range idem.Counters() {
		m := ms[c.Name()]
		if m.Unit != "{event}" || m.Description == "" || sumOf(t, ms, c.Name(), uc) != 2 {
			t.Errorf("counter %s: unit %q, description %q, %v", c.Name(), m.Unit, m.Description, m.Data)
		}
	}
	for _, h := range idem.Histograms() {
		m := ms[h.Name()]
		n, s := histogramOf(t, ms, h.Name(), uc)
		if m.Unit != h.Unit() || m.Description == "" || n != 1 || s != 3 {
			t.Errorf("histogram %s: unit %q, description %q, %d values summing to %v", h.Name(), m.Unit, m.Description, n, s)
		}
	}
	if ms["api.idempotency.response.size"].Unit != "By" || ms["api.idempotency.attempt.duration"].Unit != "s" {
		t.Error("units: sizes in By, times in s")
	}
}

// BenchmarkMetricsAdd: a counter increment through the adapter, with its
// label set already seen (the steady state).
func BenchmarkMetricsAdd(b *testing.B) {
	w := newWorld(b)
	l := idem.Labels{UseCase: useCase, Event: "reserve", Decision: "replay"}
	for b.Loop() {
		w.metrics.Add(idem.CounterReserveReplay, l, 1)
	}
}
