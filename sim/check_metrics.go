package sim

import (
	"errors"
	"fmt"
	"strings"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// counterRecount is SPEC §7's counters as the checker recounts them, from
// every event a caller applied and what it heard back, by what each
// counter means in the specification, not by the executor's code. Store
// errors (store.error) and worker errors are not recounted: the executor
// leaves out the errors of a caller that went away, and a worker counts its
// batches' failures, neither of which is an applied event.
//
// RunLive recounts every caller's events (each Do, the sweeper and the
// reconciler apply theirs through a store view that hears them); the
// simulator recounts its servers' (what each Flow is told, in
// world.opAnswer), and holds the counts of the servers' events to it.
type counterRecount struct {
	n [len(counters{}.total)]uint64
}

// serverCounters are the counters of the servers' events (reserve, and an
// owner's events); allCounters add the workers' (sweep, resolve).
var (
	serverCounters = []idem.Counter{
		idem.CounterReserveCreated, idem.CounterReserveReplay, idem.CounterReserveInProgress, idem.CounterReserveKeyMisuse,
		idem.CounterReserveFailedRetry, idem.CounterReserveUnknown, idem.CounterZombieKey, idem.CounterReconcileScheduled,
		idem.CounterStoreRejected,
	}
	allCounters = append(serverCounters[:len(serverCounters):len(serverCounters)],
		idem.CounterTTLPruned, idem.CounterReconcileResolved, idem.CounterReconcileFailed)
)

// heard counts one applied event of kind ev, as its caller heard it.
func (r *counterRecount) heard(ev core.EventKind, a *store.Applied, err error) {
	if err != nil {
		// Nothing the caller knows applied. A refusal for good is counted
		// apart from an outage (SPEC §5, issue 20 §1).
		if errors.Is(err, store.ErrRejected) {
			r.n[idem.CounterStoreRejected]++
		}
		return
	}
	d, before, after := a.Transition.Decision.Kind, a.Before, a.Record.Status
	if ev == core.EventReserve {
		switch d {
		case core.DecisionExecute: // an attempt starts: on a failed_retryable key, again; on any other, as a new record
			if before == core.StatusFailedRetryable {
				r.n[idem.CounterReserveFailedRetry]++
			} else {
				r.n[idem.CounterReserveCreated]++
			}
		case core.DecisionReplay:
			r.n[idem.CounterReserveReplay]++
		case core.DecisionInFlight:
			r.n[idem.CounterReserveInProgress]++
		case core.DecisionMismatch:
			r.n[idem.CounterReserveKeyMisuse]++
		case core.DecisionReconciling:
			r.n[idem.CounterReserveUnknown]++
		}
	}
	if before == core.StatusInProgress && after == core.StatusUnknown {
		r.n[idem.CounterReconcileScheduled]++
		// A zombie is an attempt found past its lease by someone else (a
		// reserve that takes the lease over, the sweeper), never an owner
		// reporting its own outcome unknown.
		if ev == core.EventReserve || ev == core.EventSweep {
			r.n[idem.CounterZombieKey]++
		}
	}
	switch {
	case ev == core.EventSweep && d == core.DecisionExpired:
		r.n[idem.CounterTTLPruned]++
	case ev == core.EventResolve && d == core.DecisionResolved:
		r.n[idem.CounterReconcileResolved]++
	case ev == core.EventResolve && d == core.DecisionAbandoned:
		r.n[idem.CounterReconcileFailed]++
	}
}

// compare holds the executor's counts of the counters which (got) to the
// recount.
func (r *counterRecount) compare(c *checker, got func(idem.Counter) uint64, which []idem.Counter) {
	var diffs []string
	for _, k := range which {
		if g, want := got(k), r.n[k]; g != want {
			diffs = append(diffs, fmt.Sprintf("%s counted %d, the events the callers heard make %d", k.Name(), g, want))
		}
	}
	if len(diffs) > 0 {
		c.failAs(invMetrics, -1, "%s", strings.Join(diffs, "; "))
	}
}
