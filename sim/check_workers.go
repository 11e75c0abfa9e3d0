package sim

import (
	"github.com/idemkit/idem/core"
)

// The workers' contracts (issue 20 §1 and §4), by what the world saw them
// do: Sweeper.RunOnce says how many records it changed or deleted (a loop
// that drains until it answers 0 stops early otherwise); a finding the
// store rejects for good is rescheduled, as still unknown with backoff,
// in the run that found it, not left first in every batch.

// workerRan hears a run of worker a end, answering n (and err).
func (c *checker) workerRan(a *workerActor, n int, err error) {
	if a.meta.actor == ActorSweeper && n != a.changed {
		c.failAs(invExecutor, -1, "Sweeper.RunOnce answered %d, and the sweeper changed or deleted %d records in that run (err %v)", n, a.changed, err)
	}
	if a.meta.actor != ActorReconciler {
		return
	}
	for _, p := range a.refused {
		c.failAs(invExecutor, p.scope, "the store rejected the finding about attempt %d, and the reconciler did not reschedule it in that run", p.token)
	}
	a.refused = a.refused[:0]
}

// findingRejected hears the store reject a finding of reconciler a's about
// the attempt token of scope: a still-unknown Resolve of it must follow.
func (c *checker) findingRejected(a *workerActor, scope int32, token core.Token) {
	a.refused = append(a.refused, attemptID{scope, token})
}

// rescheduled hears a call of a's about scope after it refused a finding
// about it: the reschedule (its load, or its write).
func (c *checker) rescheduled(a *workerActor, scope int32) {
	for i, p := range a.refused {
		if p.scope == scope {
			a.refused = append(a.refused[:i], a.refused[i+1:]...)
			return
		}
	}
}
