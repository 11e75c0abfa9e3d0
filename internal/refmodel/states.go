package refmodel

import (
	"time"

	"github.com/idemkit/idem/core"
)

// The error codes the table writes into a record's last error code when
// its event brings none (core documents them beside Record.LastErrorCode
// and the events): the model's own spelling, so that a core that changed
// one would disagree with it.
const (
	codeLeaseExpired = "lease_expired"           // a lease ran out before its owner told the outcome
	codeNotExecuted  = "not_executed"            // a Fail without a code
	codeUnknown      = "outcome_unknown"         // a MarkUnknown without a code
	codeReconciled   = "reconciled_not_executed" // the reconciler found no side effect
)

// The states a record enters, each the same whichever event brings it there.

// becomeUnknown hands the record to the reconciler, which looks now and
// counts its answers from zero. The lease end stays: it bounds when the
// attempt may still act, before which the reconciler may not call it not
// executed.
func (c *change) becomeUnknown(code string) {
	r := &c.Record
	r.Status = core.StatusUnknown
	r.LastErrorCode = core.ErrorCode(code)
	r.ReconcileAfter = c.now
	r.ReconcileAttempts = 0
	c.update()
}

// becomeCompleted stores resp as the outcome, replayed until now + TTL;
// the record is no longer leased, scheduled or in error.
func (c *change) becomeCompleted(resp *core.Response) {
	r := &c.Record
	r.Status = core.StatusCompleted
	r.Response = *resp
	r.LastErrorCode = ""
	r.LockedUntil = time.Time{}
	r.ReconcileAfter = time.Time{}
	r.CompletedAt = c.now
	r.ExpiresAt = c.now.Add(c.p.TTL)
	c.update()
}

// becomeFailed records that the attempt did not execute, for code, until
// now + TTL; the record is no longer leased or scheduled.
func (c *change) becomeFailed(code string) {
	r := &c.Record
	r.Status = core.StatusFailedRetryable
	r.LastErrorCode = core.ErrorCode(code)
	r.LockedUntil = time.Time{}
	r.ReconcileAfter = time.Time{}
	r.ExpiresAt = c.now.Add(c.p.TTL)
	c.update()
}

// orDefault is code, or def when the event brought none.
func orDefault(code, def string) string {
	if code == "" {
		return def
	}
	return code
}
