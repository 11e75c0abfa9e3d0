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
	if i, ok := c.w.scopeIdx[before.Scope]; ok {
		scope = i
	}
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

// listedDue hears a Due of kind at the store's time now answer recs
// (limit at most): every record due by then must be there, unless the
// limit cut the list short. Due times are the store's (store.DueKind):
// for a sweep, a lease end or an expires_at; for the reconciler, a
// non-zero reconcile_after.
func (c *checker) listedDue(kind store.DueKind, limit int, now time.Time, recs []core.Record) {
	if len(recs) >= limit {
		return
	}
	for i := range c.w.shadow {
		rec := &c.w.shadow[i]
		var at time.Time
		switch {
		case kind == store.DueSweep && rec.Status == core.StatusInProgress:
			at = rec.LockedUntil
		case kind == store.DueSweep && (rec.Status == core.StatusCompleted || rec.Status == core.StatusFailedRetryable || rec.Status == core.StatusExpired):
			at = rec.ExpiresAt
		case kind == store.DueReconcile && rec.Status == core.StatusUnknown && !rec.ReconcileAfter.IsZero():
			at = rec.ReconcileAfter
		default:
			continue
		}
		if !due(now, at) {
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
