package refmodel

import "github.com/idemkit/idem/core"

// sweep enforces the deadlines the table keeps: a lease past its end hands
// the record to the reconciler (never to a new attempt); a completed or
// failed_retryable record past its TTL expires, by the policy into a
// tombstone or into nothing; a tombstone past its retention is pruned. The
// TTL never ends an in_progress or unknown record.
func (c *change) sweep() {
	rec := c.was
	switch {
	case rec.Status == core.StatusInProgress && c.due(rec.LockedUntil):
		c.becomeUnknown(codeLeaseExpired)
		c.answer(core.DecisionLeaseExpired)
	case (rec.Status == core.StatusCompleted || rec.Status == core.StatusFailedRetryable) && c.due(rec.ExpiresAt):
		if c.p.Expiry == core.ExpiryHard {
			c.remove()
		} else {
			c.becomeTombstone()
		}
		c.answer(core.DecisionExpired)
	case rec.Status == core.StatusExpired && c.due(rec.ExpiresAt):
		c.remove()
		c.answer(core.DecisionPruned)
	default:
		c.answer(core.DecisionNothingDue)
	}
}

// becomeTombstone keeps of a settled record what detects the key's reuse
// (its scope, fingerprint, token and times) and drops its outcome and
// error; it is pruned after the policy's retention from now.
func (c *change) becomeTombstone() {
	r := &c.Record
	r.Status = core.StatusExpired
	r.Response = core.Response{}
	r.LastErrorCode = ""
	r.ExpiresAt = c.now.Add(c.p.TombstoneRetention)
	c.update()
}
