package sim

import (
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// The checker of the lifecycle table's time boundaries (SPEC §5): every
// deadline is "now >= the deadline" — a settled record is no longer live
// at exactly its expires_at, a lease is over at exactly its locked_until,
// a record is due at exactly its due time (a heartbeat's extension is the
// lifecycle checker's, check_store.go, on the write). It judges each
// transition the core makes, and each Due listing, by these rules of its
// own, from the record before the event and the store's time; it never
// asks the core. With a coarse store clock (storeClock) the boundaries are
// met often.
//
// It is not a third copy of the table: it computes no decision and no
// record, only on which side of its instant each deadline falls, and it
// sees what the lifecycle checker (which holds writes to the reference
// model) does not: every step, those over a stale read that never reach
// the store included, and the store's Due listings, which are no row of
// the table.

// observeStep is step (core.Step if nil) with the checker watching every
// transition: the store and every Op step through it. It changes nothing.
func (w *world) observeStep(step core.StepFunc) core.StepFunc {
	if step == nil {
		step = core.Step
	}
	return func(rec *core.Record, ev *core.Event, p *core.Policy) (core.Transition, error) {
		before := *rec
		tr, err := step(rec, ev, p)
		if err == nil && !w.stopped {
			w.check.stepped(&before, ev, p, rec, tr.Decision.Kind)
		}
		return tr, err
	}
}

// due reports whether now is at or past t (SPEC §5's "now >= t").
func due(now, t time.Time) bool { return !now.Before(t) }

// stepped judges one transition: before is the record the event found,
// after what it left, d the decision.
func (c *checker) stepped(before *core.Record, ev *core.Event, p *core.Policy, after *core.Record, d core.DecisionKind) {
	now := ev.Now
	scope := int32(-1)
	if i, ok := c.w.scopeIndex(before.Scope); ok {
		scope = i
	}
	c.owned(scope, before, ev, d)
	switch ev.Kind {
	case core.EventReserve:
		switch before.Status {
		case core.StatusCompleted, core.StatusFailedRetryable:
			expired := due(now, before.ExpiresAt)
			if expired && d != core.DecisionExecute {
				c.fail(invTime, scope, "reserve at %v on a %v record that expired at %v answered %v, not execute", now, before.Status, before.ExpiresAt, d)
			}
			if !expired && before.Status == core.StatusCompleted && d == core.DecisionExecute {
				c.fail(invTime, scope, "reserve at %v executed a completed record still live until %v", now, before.ExpiresAt)
			}
		case core.StatusInProgress:
			if ev.Fingerprint == before.Fingerprint && due(now, before.LockedUntil) == (d == core.DecisionInFlight) {
				c.fail(invTime, scope, "reserve at %v on a lease ending at %v answered %v", now, before.LockedUntil, d)
			}
		}
	case core.EventSweep:
		var deadline time.Time
		want := core.DecisionExpired
		switch before.Status {
		case core.StatusInProgress:
			deadline, want = before.LockedUntil, core.DecisionLeaseExpired
		case core.StatusCompleted, core.StatusFailedRetryable:
			deadline = before.ExpiresAt
		case core.StatusExpired:
			deadline, want = before.ExpiresAt, core.DecisionPruned
		default:
			return
		}
		if due(now, deadline) != (d == want) {
			c.fail(invTime, scope, "sweep at %v of a %v record due at %v answered %v", now, before.Status, deadline, d)
		}
	}
}

// owned holds an owner event that the core accepted (SPEC §5: a token
// that does not own the record is Stale and changes nothing) to the token
// of the record it found, whatever the lease's state: a completion,
// failure, heartbeat or mark of an attempt whose lease ran out while its
// record stayed in_progress is still its own, and only its own.
func (c *checker) owned(scope int32, before *core.Record, ev *core.Event, d core.DecisionKind) {
	switch ev.Kind {
	case core.EventComplete, core.EventFail, core.EventMarkUnknown, core.EventHeartbeat:
	default:
		return
	}
	switch d {
	case core.DecisionCompleted, core.DecisionFailed, core.DecisionMarkedUnknown, core.DecisionExtended, core.DecisionAcknowledged:
		if !before.Exists() || before.Token != ev.Token {
			c.fail(4, scope, "%v of token %d was accepted (%v) on a %v record of token %d (lease until %v, now %v)",
				ev.Kind, ev.Token, d, before.Status, before.Token, before.LockedUntil, ev.Now)
		}
	}
}

// dueAt is when rec becomes due for kind (store.DueKind), and whether it
// ever does: for a sweep, an in_progress record's lease end or a settled
// one's expires_at; for the reconciler, an unknown record's non-zero
// reconcile_after.
func dueAt(kind store.DueKind, rec *core.Record) (time.Time, bool) {
	switch {
	case kind == store.DueSweep && rec.Status == core.StatusInProgress:
		return rec.LockedUntil, true
	case kind == store.DueSweep && (rec.Status == core.StatusCompleted || rec.Status == core.StatusFailedRetryable || rec.Status == core.StatusExpired):
		return rec.ExpiresAt, true
	case kind == store.DueReconcile && rec.Status == core.StatusUnknown && !rec.ReconcileAfter.IsZero():
		return rec.ReconcileAfter, true
	}
	return time.Time{}, false
}

// listedDue hears a Due of kind at the store's time now answer recs
// (limit at most): only records due by then, most overdue first, at most
// limit of them, and (when now is exact, not a reading taken after the
// listing) every record due by then unless the limit cut the list short.
func (c *checker) listedDue(kind store.DueKind, limit int, now time.Time, exact bool, recs []core.Record) {
	if len(recs) > limit {
		c.fail(invTime, -1, "Due(%v, limit %d) listed %d records", kind, limit, len(recs))
		return
	}
	var prev time.Time
	for i := range recs {
		at, ok := dueAt(kind, &recs[i])
		scope := c.w.scopeNumber(recs[i].Scope)
		switch {
		case !ok || !due(now, at):
			c.fail(invTime, scope, "Due(%v) at %v listed a %v record that is not due (due at %v)", kind, now, recs[i].Status, at)
			return
		case at.Before(prev):
			c.fail(invTime, scope, "Due(%v) at %v listed a record due at %v after one due at %v: not most overdue first", kind, now, at, prev)
			return
		}
		prev = at
	}
	if len(recs) >= limit || !exact {
		return
	}
	for i := range c.w.shadow {
		rec := &c.w.shadow[i]
		at, ok := dueAt(kind, rec)
		if !ok || !due(now, at) {
			continue
		}
		listed := false
		for j := range recs {
			if recs[j].Scope == rec.Scope {
				listed = true
				break
			}
		}
		if !listed {
			c.fail(invTime, int32(i), "Due(%v) at %v left out a %v record due at %v", kind, now, rec.Status, at)
			return
		}
	}
}
