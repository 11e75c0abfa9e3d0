package sim

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// failAs records a violation of check inv (invExecutor, invMetrics) through
// the checker, unless one was recorded already: later ones follow from it.
func (c *checker) failAs(inv int, scope int32, format string, args ...any) {
	if len(c.w.report.Violations) > 0 {
		return
	}
	c.fail(0, scope, format, args...)
	v := &c.w.report.Violations[len(c.w.report.Violations)-1]
	v.Invariant, v.Name = inv, invariantNames[inv]
}

// heard hears what a server's Flow is told of an event it applied (m
// names it): the counters' recount, and the lease an Extended heartbeat
// answer grants.
func (w *world) heard(m *opMeta, a *store.Applied, err error) {
	w.recount.heard(m.event, a, err)
	w.check.extension(m.scope, m.event, a, err)
}

// extension holds an Extended heartbeat answer to SPEC §5 Heartbeat: the
// lease then runs at least a lease from the store's now (it never shrinks,
// so it may run longer).
func (c *checker) extension(scope int32, ev core.EventKind, a *store.Applied, err error) {
	if err != nil || ev != core.EventHeartbeat || a.Transition.Decision.Kind != core.DecisionExtended {
		return
	}
	if want := a.Now.Add(c.w.policy.LeaseDuration); a.Record.LockedUntil.Before(want) {
		c.failAs(invExecutor, scope, "a heartbeat of attempt %d was answered Extended, but its lease ends %v, not a lease after the store's now (%v)",
			a.Record.Token, fmtTime(int64(a.Record.LockedUntil.Sub(epoch))), fmtTime(int64(want.Sub(epoch))))
	}
}

// heard hears what the caller of a Do (call) or a worker (call nil) heard
// of applying ev, a call sent at sent: the counters' recount, and for a Do
// what its attempt knows of its lease, and how its outcome was written.
func (l *live) heard(c *liveCall, ev core.Event, a *store.Applied, err error, sent time.Time) {
	w := l.lock()
	defer l.unlock()
	l.recount.heard(ev.Kind, a, err)
	if c == nil {
		return
	}
	w.check.extension(c.req.scope, ev.Kind, a, err)
	switch ev.Kind {
	case core.EventReserve:
		if err == nil && a.Transition.Decision.Kind == core.DecisionExecute {
			c.reckoned = max(a.Now.Sub(sent), 0) // the action's lease, which it sets, starts here
		}
	case core.EventHeartbeat:
		switch {
		case err != nil || !c.acting:
		case a.Transition.Decision.Kind == core.DecisionExtended:
			if a.Record.LockedUntil.After(c.leaseEnd) {
				c.prevReckoned, c.extendedAt = c.leaseReckoned(), l.now()
				c.leaseEnd, c.reckoned = a.Record.LockedUntil, max(a.Now.Sub(sent), 0)
			}
		case c.lostAt.IsZero():
			c.lostAt = l.now() // the heart now knows the lease is lost, for good
		}
	case core.EventComplete, core.EventFail, core.EventMarkUnknown:
		if c.acted && err == nil && c.ctx.Err() != nil {
			l.played.outcomeAfterLeft++
		}
		if c.acted && err != nil && !errors.Is(err, errStoreDown) && !store.BadInput(err) && !errors.Is(err, store.ErrRejected) {
			// The store did not fail, yet the outcome was not written: the
			// write did not outlive its caller (SPEC §5: a client that
			// disconnects must not turn a charge into an unknown).
			w.check.failAs(invExecutor, c.req.scope, "the %v of attempt %d failed though the store did not: %v (its caller gone: %v)", ev.Kind, c.token, err, c.ctx.Err() != nil)
		}
	}
}

// leaseMarginMax is the checker's own reading of how early Do may tell an
// action that its lease ended (Executor.Do's documentation): a twentieth
// of the lease, at most a second, and a millisecond for the host's clock,
// before the lease's end as Do reckons it (leaseReckoned).
func leaseMarginMax(lease time.Duration) time.Duration {
	return min(lease/20, time.Second) + time.Millisecond
}

// leaseReckoned is the end of the lease c last heard of as Do reckons it:
// from when the call that granted it was sent, which is earlier than the
// store's lease end by however long the call took to reach the store (a
// host that is busy makes that long).
func (c *liveCall) leaseReckoned() time.Time { return c.leaseEnd.Add(-c.reckoned) }

// leaseCancelled hears an action cancelled for a lost lease (SPEC §5
// Heartbeat): not while the lease it heard of still runs, but for the
// margin before its end. A heartbeat that the store failed leaves the
// lease to its last extension; only its end, or an answer that the record
// is no longer the attempt's, loses it.
func (l *live) leaseCancelled(c *liveCall) {
	w := l.lock()
	defer l.unlock()
	margin := leaseMarginMax(w.policy.LeaseDuration)
	now := l.now()
	// An extension heard here reaches Do's heart a moment later: if the
	// older lease's end came while it was on its way (heard no more than
	// settle before that end, and the end has passed), Do rightly acted on
	// the older lease. An extension heard long before is Do's to keep.
	settle := max(w.policy.LeaseDuration/10, 10*time.Millisecond)
	if prev := c.prevReckoned.Add(-margin); !c.extendedAt.IsZero() && !now.Before(prev) && !c.extendedAt.Before(prev.Add(-settle)) {
		return
	}
	if now.Before(c.leaseReckoned().Add(-margin)) {
		w.check.failAs(invExecutor, c.req.scope, "attempt %d was cancelled for a lost lease %v before the end of the lease it had been extended to (%v, %v earlier from the call's send; its first lease ended %v)",
			c.token, c.leaseEnd.Sub(now), fmtTime(int64(c.leaseEnd.Sub(epoch))), c.reckoned, fmtTime(int64(c.firstEnd.Sub(epoch))))
	}
}

// actionEnded hears the action return: an attempt whose heartbeat was told
// the lease is lost must be told at once (SPEC §5: its context cancelled),
// not left to run on beside the attempt that may take the key over, and
// in any case by the end of the lease it last heard of. An action that
// ended on its own while its context was cancelled (both were ready at
// once) was told.
func (l *live) actionEnded(a *actionRun) {
	if errors.Is(context.Cause(a.ctx), idem.ErrLeaseLost) {
		a.leaseLost = true
	}
	w := l.lock()
	defer l.unlock()
	c := a.c
	c.acting, c.acted = false, true
	if now := l.now(); c.leaseEnd.After(c.firstEnd) && now.After(c.firstEnd) {
		l.played.extendedPastFirst++
	}
	if a.leaseLost && (!c.lostAt.IsZero() || !l.now().Before(c.leaseReckoned().Add(-leaseMarginMax(w.policy.LeaseDuration)))) {
		l.played.leaseLostTold++ // told, by a heartbeat's answer or by the lease's end
	}
	if a.leaseLost || a.callerGone {
		return
	}
	slack := max(w.policy.LeaseDuration/3, 10*time.Millisecond)
	// Half a lease past its end: a timer of a busy host fires late, an
	// action that is never told runs on for a lease and more. The host's
	// stalls since the lease's end (measured, live_lag.go) are the host's,
	// not Do's.
	stalled := l.stalledSince(c.leaseEnd)
	if late := l.now().Sub(c.leaseEnd); late > max(w.policy.LeaseDuration/2, 20*time.Millisecond)+stalled {
		// SPEC §5: told no later than the lease's end as the executor
		// last knew it, whatever the store does (a stalled or hung
		// heartbeat included).
		w.check.failAs(invExecutor, c.req.scope, "attempt %d's lease ended at %v, but its action ran on uncancelled for %v (the host stalled %v of it)",
			c.token, fmtTime(int64(c.leaseEnd.Sub(epoch))), late, stalled)
		return
	}
	if c.lostAt.IsZero() {
		return
	}
	if late, stalled := l.now().Sub(c.lostAt), l.stalledSince(c.lostAt); late > slack+stalled {
		w.check.failAs(invExecutor, c.req.scope, "attempt %d's heartbeat found the record no longer its own at %v, but its action ran on uncancelled for %v (the host stalled %v of it)",
			c.token, fmtTime(int64(c.lostAt.Sub(epoch))), late, stalled)
	}
}

// checkResult holds what Do returned to its caller: a success is an
// outcome (executed or replayed, with a status HTTP can send), never an
// empty result (a store failure answered as success breaks fail closed);
// an in-flight answer has the status the policy asks for (409, or 202).
// A caller that went away is not judged: nobody hears its answer.
// False if the answer is not one: the other checkers are not to read it.
func (l *live) checkResult(c *liveCall, res idem.Result, err error, callerGone bool) bool {
	w := l.w
	if err == nil {
		if (res.Kind != idem.ResultExecuted && res.Kind != idem.ResultReplayed) || res.Response.StatusCode < 200 || res.Response.StatusCode > 599 {
			w.check.fail(7, c.req.scope, "Do answered success without an outcome (kind %v, status %d): a failure answered as success", res.Kind, res.Response.StatusCode)
			return false
		}
		return true
	}
	if !callerGone && w.check.inFlightAnswer(c.req.scope, err) {
		l.played.inFlight++
	}
	return true
}

// inFlightAnswer holds an answer (the error of a Do or a Flow) that another
// attempt holds the key to the status the policy asks for (SPEC §5: 409,
// or 202 + Retry-After); true if err was such an answer.
func (c *checker) inFlightAnswer(scope int32, err error) bool {
	var e *idem.Error
	if !errors.As(err, &e) || e.Code != idem.CodeInProgress {
		return false
	}
	want := http.StatusConflict
	if c.w.policy.InFlightAnswer == core.InFlightAccepted {
		want = http.StatusAccepted
	}
	if e.Status != want {
		c.failAs(invExecutor, scope, "an in-flight answer had status %d; the policy (%v) asks for %d", e.Status, c.w.policy.InFlightAnswer, want)
	}
	return true
}
