package refmodel

import (
	"time"

	"github.com/idemkit/idem/core"
)

// reserve is the Reserve table of SPEC §5.
func (c *change) reserve() {
	rec := c.was
	if !binds(rec, c.now) {
		c.newIncarnation()
		return
	}
	if rec.Fingerprint != c.ev.Fingerprint {
		c.answer(core.DecisionMismatch)
		return
	}
	switch rec.Status {
	case core.StatusInProgress:
		if !c.due(rec.LockedUntil) {
			c.answerAfter(core.DecisionInFlight, c.p.RetryAfter)
			return
		}
		// The owner may have executed: never again, the reconciler decides.
		c.becomeUnknown(codeLeaseExpired)
		c.answerAfter(core.DecisionReconciling, c.p.RetryAfter)
	case core.StatusCompleted:
		c.answer(core.DecisionReplay)
	case core.StatusFailedRetryable:
		c.retry()
	case core.StatusUnknown:
		// Come back when the reconciler looks again, and not sooner than
		// the policy's least Retry-After.
		wait := c.p.RetryAfter
		if at := rec.ReconcileAfter; !at.IsZero() && at.Sub(c.now) > wait {
			wait = at.Sub(c.now)
		}
		c.answerAfter(core.DecisionReconciling, wait)
	}
}

// binds reports whether rec still holds its key at now, so that a reserve
// must answer from it: in_progress and unknown records always (no TTL ends
// them), completed and failed_retryable ones until their expires_at, and
// neither a tombstone nor an absent record.
func binds(rec *core.Record, now time.Time) bool {
	switch rec.Status {
	case core.StatusInProgress, core.StatusUnknown:
		return true
	case core.StatusCompleted, core.StatusFailedRetryable:
		return now.Before(rec.ExpiresAt)
	}
	return false
}

// newIncarnation starts the key's life anew with the event's attempt: a
// record with nothing of the one before but its scope, inserted where
// there was none.
func (c *change) newIncarnation() {
	if !c.fresh() {
		return
	}
	c.Record = core.Record{
		Scope: c.was.Scope, Status: core.StatusInProgress, Fingerprint: c.ev.Fingerprint, Token: c.ev.Token,
		LockedUntil: c.leaseEnd(), CreatedAt: c.now, ExpiresAt: c.now.Add(c.p.TTL),
	}
	c.Decision = core.Decision{Kind: core.DecisionExecute, Token: c.ev.Token}
	if c.exists() {
		c.update()
		return
	}
	c.Write = core.Write{Kind: core.WriteInsert}
	c.Record.Version = 1
}

// retry runs a failed_retryable record's request again, in the same
// incarnation (its created_at and whatever it counted stay), under the
// event's attempt with a new lease and TTL.
func (c *change) retry() {
	if !c.fresh() {
		return
	}
	c.Record.Status = core.StatusInProgress
	c.Record.Token = c.ev.Token
	c.Record.LockedUntil = c.leaseEnd()
	c.Record.LastErrorCode = ""
	c.Record.ExpiresAt = c.now.Add(c.p.TTL)
	c.Decision = core.Decision{Kind: core.DecisionExecute, Token: c.ev.Token}
	c.update()
}

// fresh reports whether the event's token may start an attempt over the
// record, else refuses the event: tokens only grow for a scope, so one
// at or below the record's was handed out before.
func (c *change) fresh() bool {
	if c.exists() && c.ev.Token <= c.was.Token {
		c.refuse("token not fresh")
		return false
	}
	return true
}
