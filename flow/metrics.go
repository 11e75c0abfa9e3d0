package flow

import (
	"errors"
	"strconv"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Counter is one of the counters of SPEC §7.
type Counter uint8

const (
	CounterReserveCreated     Counter = iota // a new record was created and its action executes
	CounterReserveReplay                     // a stored outcome was replayed
	CounterReserveInProgress                 // another attempt held the key: the client must retry
	CounterReserveKeyMisuse                  // the key is live with another fingerprint
	CounterReserveFailedRetry                // a failed_retryable record executes again
	CounterReserveUnknown                    // the key is unknown: the client waits for the reconciler
	CounterStoreError                        // a store call failed (the request failed closed)
	CounterZombieKey                         // an in_progress record was found past its lease
	CounterTTLPruned                         // a settled record was expired or deleted after its TTL
	CounterReconcileScheduled                // a record became unknown and awaits the reconciler
	CounterReconcileResolved                 // the reconciler settled an unknown record
	CounterReconcileFailed                   // the reconciler gave up on a record after its maximum attempts
	CounterWorkerError                       // a sweeper or reconciler run could not handle a batch, or a record in it
	CounterStoreRejected                     // the store rejected a write for good (store.ErrRejected): not an outage
	counterCount
)

var counterNames = [counterCount]string{
	"api.idempotency.reserve.created.count",
	"api.idempotency.reserve.replay.count",
	"api.idempotency.reserve.in_progress.count",
	"api.idempotency.reserve.key_misuse.count",
	"api.idempotency.reserve.failed_retry.count",
	"api.idempotency.reserve.unknown.count",
	"api.idempotency.store.error.count",
	"api.idempotency.zombie_key.count",
	"api.idempotency.ttl_pruned.count",
	"api.idempotency.reconcile.scheduled.count",
	"api.idempotency.reconcile.resolved.count",
	"api.idempotency.reconcile.failed.count",
	"api.idempotency.worker.error.count",
	"api.idempotency.store.rejected.count",
}

// Counters lists every counter, in a stable order.
func Counters() []Counter {
	cs := make([]Counter, counterCount)
	for i := range cs {
		cs[i] = Counter(i)
	}
	return cs
}

// Name is the counter's metric name, as in SPEC §7.
func (c Counter) Name() string {
	if c < counterCount {
		return counterNames[c]
	}
	return "counter(" + strconv.Itoa(int(c)) + ")"
}

func (c Counter) String() string { return c.Name() }

// Valid reports whether c is one of Counters.
func (c Counter) Valid() bool { return c < counterCount }

// Labels are the only dimensions a counter has. Each comes from a small
// closed set: the use case is a name in the caller's code, the event and the
// decision are names of the core's (core.EventKind, core.DecisionKind). The
// key, principal and tenant are never labels: they are unbounded and may be
// personal data.
type Labels struct {
	UseCase  string
	Event    string // the event that was applied ("reserve", "sweep", ...)
	Decision string // the core's decision; empty when the store failed
}

// Metrics receives counter increments. Implementations must be safe for
// concurrent use and must not block.
type Metrics interface {
	Add(c Counter, l Labels, n uint64)
}

// MetricsNop discards everything; it is the default.
type MetricsNop struct{}

func (MetricsNop) Add(Counter, Labels, uint64) {}

// Count counts into m what applying one event of kind ev to a scope of
// useCase did: a store failure, or the transition. Every path that applies
// events (a Flow, its Lease, the workers, CompleteIn) calls it with what store.Apply returned, so the
// counters mean the same whoever caused the transition. The core refusing
// an event is the caller's bad input and counts nothing here.
func Count(m Metrics, useCase string, ev core.EventKind, a *store.Applied, err error) {
	if counting(m) {
		countEvent(m, useCase, ev, a, err)
	}
}

// countEvent is Count for metrics that count.
func countEvent(m Metrics, useCase string, ev core.EventKind, a *store.Applied, err error) {
	switch {
	case err == nil:
		observe(m, ev, a)
	case errors.Is(err, store.ErrRejected):
		m.Add(CounterStoreRejected, Labels{UseCase: useCase, Event: ev.String()}, 1)
	case !store.BadInput(err):
		m.Add(CounterStoreError, Labels{UseCase: useCase, Event: ev.String()}, 1)
	}
}

// observe counts what one applied event did.
func observe(m Metrics, ev core.EventKind, a *store.Applied) {
	l := Labels{UseCase: a.Record.Scope.UseCase, Event: ev.String(), Decision: a.Transition.Decision.Kind.String()}
	add := func(c Counter) { m.Add(c, l, 1) }
	before, after := a.Before, a.Record.Status
	switch a.Transition.Decision.Kind {
	case core.DecisionExecute:
		if before == core.StatusFailedRetryable {
			add(CounterReserveFailedRetry)
		} else {
			add(CounterReserveCreated)
		}
	case core.DecisionReplay:
		add(CounterReserveReplay)
	case core.DecisionInFlight:
		add(CounterReserveInProgress)
	case core.DecisionMismatch:
		add(CounterReserveKeyMisuse)
	case core.DecisionReconciling:
		add(CounterReserveUnknown)
	case core.DecisionExpired:
		add(CounterTTLPruned)
	case core.DecisionResolved:
		add(CounterReconcileResolved)
	case core.DecisionAbandoned:
		add(CounterReconcileFailed)
	}
	if before == core.StatusInProgress && after == core.StatusUnknown {
		if ev != core.EventMarkUnknown {
			add(CounterZombieKey)
		}
		add(CounterReconcileScheduled)
	}
}
