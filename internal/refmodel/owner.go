package refmodel

import "github.com/idemkit/idem/core"

// The owner events of SPEC §5: each is about the attempt its token names,
// and a token that does not own the record is stale and changes nothing.
// The owner of a record whose status forbids the event is told so
// (Conflict), unless the record already is what the event would make it
// (Acknowledged: the event was applied before).

// owner applies an owner event: to its own attempt's record, or to none.
func (c *change) owner() {
	if !c.owned() {
		c.answer(core.DecisionStale)
		return
	}
	switch c.ev.Kind {
	case core.EventComplete:
		c.complete()
	case core.EventFail:
		c.fail()
	case core.EventMarkUnknown:
		c.markUnknown()
	case core.EventHeartbeat:
		c.heartbeat()
	}
}

// complete stores the owner's outcome, from in_progress or from unknown
// (the owner's proof beats anything the reconciler could find).
func (c *change) complete() {
	switch {
	case c.was.Status == core.StatusInProgress || c.was.Status == core.StatusUnknown:
		c.becomeCompleted(&c.ev.Response)
		c.answer(core.DecisionCompleted)
	case c.was.Status == core.StatusCompleted && SameResponse(c.was.Response, c.ev.Response):
		c.answer(core.DecisionAcknowledged)
	default:
		c.answer(core.DecisionConflict)
	}
}

// fail releases the key of an attempt that definitely did not execute:
// failed_retryable, or no record at all if the policy evicts.
func (c *change) fail() {
	switch c.was.Status {
	case core.StatusInProgress, core.StatusUnknown:
		if c.p.Fail == core.FailEvict {
			c.remove()
		} else {
			c.becomeFailed(orDefault(string(c.ev.ErrorCode), codeNotExecuted))
		}
		c.answer(core.DecisionFailed)
	default:
		c.elsewhere(core.StatusFailedRetryable)
	}
}

// markUnknown is the owner saying it cannot tell whether it executed.
func (c *change) markUnknown() {
	switch c.was.Status {
	case core.StatusInProgress:
		c.becomeUnknown(orDefault(string(c.ev.ErrorCode), codeUnknown))
		c.answer(core.DecisionMarkedUnknown)
	default:
		c.elsewhere(core.StatusUnknown)
	}
}

// heartbeat extends the owner's lease to now + lease, or leaves it where it
// is if that is later: a store clock that stepped back must not shorten a
// lease that others rely on. It writes even when the lease stays.
func (c *change) heartbeat() {
	if c.was.Status != core.StatusInProgress {
		c.answer(core.DecisionConflict)
		return
	}
	if end := c.leaseEnd(); end.After(c.was.LockedUntil) {
		c.Record.LockedUntil = end
	}
	c.update()
	c.answer(core.DecisionExtended)
}

// elsewhere answers an owner event on a record whose status it does not
// apply to: Acknowledged if the record is already where the event leads
// (made), else Conflict.
func (c *change) elsewhere(made core.Status) {
	if c.was.Status == made {
		c.answer(core.DecisionAcknowledged)
		return
	}
	c.answer(core.DecisionConflict)
}
