package refmodel

import (
	"math"
	"time"

	"github.com/idemkit/idem/core"
)

// resolve records the reconciler's finding about the attempt of an unknown
// record: executed, the outcome is stored; not executed, the key is
// released (failed_retryable, whatever the policy's fail mode: that is the
// owner's Fail); still unknown, the reconciler looks again after a backoff,
// or, at the policy's maximum of such answers, leaves the record to an
// operator. A finding about any other record changes nothing.
func (c *change) resolve() {
	switch {
	case c.was.Status != core.StatusUnknown:
		c.answer(core.DecisionNotApplicable)
	case !c.owned():
		// About an earlier attempt than the one now unknown.
		c.answer(core.DecisionStale)
	case c.ev.Verdict == core.VerdictExecuted:
		c.becomeCompleted(&c.ev.Response)
		c.answer(core.DecisionResolved)
	case c.ev.Verdict == core.VerdictNotExecuted:
		c.becomeFailed(codeReconciled)
		c.answer(core.DecisionResolved)
	default:
		c.stillUnknown()
	}
}

// stillUnknown counts one more answer that could not tell. The count
// stops at its largest value rather than wrap (a wrapped count would
// schedule a record given up); the event's code, if any, says why the
// reconciler could not tell.
func (c *change) stillUnknown() {
	r := &c.Record
	wait := ReconcileBackoff(c.p, c.was.ReconcileAttempts)
	if r.ReconcileAttempts != math.MaxUint32 {
		r.ReconcileAttempts++
	}
	if c.ev.ErrorCode != "" {
		r.LastErrorCode = c.ev.ErrorCode
	}
	c.update()
	if r.ReconcileAttempts >= c.p.ReconcileAttemptsMax {
		r.ReconcileAfter = time.Time{} // no longer scheduled
		c.answer(core.DecisionAbandoned)
		return
	}
	r.ReconcileAfter = c.now.Add(wait)
	c.answerAfter(core.DecisionRescheduled, wait)
}

// ReconcileBackoff is the wait before the reconciler's next look at a
// record answered "still unknown" attempts times before: the policy's base
// doubled once per answer, at most its cap (and never past it on the way,
// whatever the count).
func ReconcileBackoff(p *core.Policy, attempts uint32) time.Duration {
	wait, ceiling := p.ReconcileBackoffBase, p.ReconcileBackoffMax
	for n := attempts; n > 0 && wait < ceiling; n-- {
		if wait > ceiling-wait {
			return ceiling // doubling would pass the cap
		}
		wait += wait
	}
	return min(wait, ceiling)
}
