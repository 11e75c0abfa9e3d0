package flow

import (
	"strconv"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Histogram is one of the distributions idem records beside its counters:
// what operators ask of an idempotency layer besides how often (how long a
// key is held, how long retries wait, how long the reconciler takes, how
// much the store keeps).
type Histogram uint8

const (
	// HistogramAttemptDuration: seconds from the reserve that started an
	// attempt to the write that recorded its outcome (completed, failed or
	// unknown), on the store's clock. Labels: the use case, and the
	// decision of that write.
	HistogramAttemptDuration Histogram = iota
	// HistogramInFlightWait: seconds a request waited for another attempt
	// on its key, in all, on the host's clock (the waits it reported).
	// Labels: the use case, and the decision it ended on (replay, or
	// in_flight when the wait ran out).
	HistogramInFlightWait
	// HistogramReconcileDuration: seconds from the end of an unknown
	// attempt's lease (the earliest a "not executed" finding can be
	// trusted) to the reconciler's write that settled the record, on the
	// store's clock; 0 when it settled before. Labels: the use case, and
	// resolved.
	HistogramReconcileDuration
	// HistogramResponseSize: bytes of a response body stored as an
	// attempt's outcome (or a reconciler's finding). Labels: the use case,
	// and the decision of the write that stored it.
	HistogramResponseSize
	histogramCount
)

var histogramNames = [histogramCount]string{
	"api.idempotency.attempt.duration",
	"api.idempotency.in_flight_wait.duration",
	"api.idempotency.reconcile.duration",
	"api.idempotency.response.size",
}

// Histograms lists every histogram, in a stable order.
func Histograms() []Histogram {
	hs := make([]Histogram, histogramCount)
	for i := range hs {
		hs[i] = Histogram(i)
	}
	return hs
}

// Name is the histogram's metric name, in the counters' style (SPEC §7).
func (h Histogram) Name() string {
	if h < histogramCount {
		return histogramNames[h]
	}
	return "histogram(" + strconv.Itoa(int(h)) + ")"
}

func (h Histogram) String() string { return h.Name() }

// Unit is the histogram's unit, as UCUM writes it (OpenTelemetry's
// convention): seconds or bytes.
func (h Histogram) Unit() string {
	if h == HistogramResponseSize {
		return "By"
	}
	return "s"
}

// Valid reports whether h is one of Histograms.
func (h Histogram) Valid() bool { return h < histogramCount }

// Distributions is the optional interface of a Metrics that also records
// histograms (as database/sql/driver's optional interfaces: a Metrics that
// has none loses nothing but them). Implementations must be safe for
// concurrent use and must not block.
type Distributions interface {
	Record(h Histogram, l Labels, v float64)
}

// Record records v for h into m, if m records distributions. Every path
// that ends an attempt or settles a record calls it, as it calls Count.
func Record(m Metrics, h Histogram, l Labels, v float64) {
	if d, ok := m.(Distributions); ok && counting(m) {
		d.Record(h, l, v)
	}
}

// seconds is d in seconds, never below zero (clocks read on two calls).
func seconds(d time.Duration) float64 { return max(d, 0).Seconds() }

// recordOutcome records what the write of an attempt's outcome (event ev)
// did: how long the attempt held its key (since reservedAt, the reserve's
// store time) and, when it stored a response, its size.
func recordOutcome(m Metrics, useCase string, ev core.EventKind, reservedAt time.Time, a *store.Applied) {
	l := Labels{UseCase: useCase, Event: ev.String(), Decision: a.Transition.Decision.Kind.String()}
	Record(m, HistogramAttemptDuration, l, seconds(a.Now.Sub(reservedAt)))
	recordStored(m, l, a)
}

// recordStored records the size of the response a's write stored, if it
// stored one.
func recordStored(m Metrics, l Labels, a *store.Applied) {
	if a.Transition.Write.Kind != core.WriteNone && a.Record.Status == core.StatusCompleted {
		Record(m, HistogramResponseSize, l, float64(len(a.Record.Response.Body)))
	}
}
