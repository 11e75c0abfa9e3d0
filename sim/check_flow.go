package sim

import (
	"errors"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Do's contract on virtual time (invariant 11): the servers host each
// request's idem.Flow as Executor.Do does, and the checker holds what the
// Flow asks of its host, and when, to SPEC §5 by its own reading, from what
// the host performed and heard:
//
//   - answer timeliness: a request that finds its key in flight waits for
//     the running attempt, and answers in_progress only once it has waited
//     the policy's InFlightWait (by the host's clock, or the store's), and
//     never waits longer; a heartbeat or any write that does not settle the
//     key does not cut the wait short;
//   - the outcome: once the action ended, the attempt's outcome is applied
//     (Complete for a response, Fail for "not executed", MarkUnknown for an
//     error or a panic), with the attempt's token, detached from the
//     client, whose hanging up must not stop it; a panic is raised again
//     once its MarkUnknown was applied, and only a panic;
//   - the lease: the action is told its lease is lost no later than the
//     lease's end as the host reckons it (from when the call that granted
//     or extended it was sent), and not while that lease still runs for
//     more than the margin, unless a heartbeat found the record no longer
//     the attempt's.
//
// It reads nothing of the Flow but what its host sees (Next's effects, the
// answer), and keeps what it notes in each call's flowWatch.

// flowWatch is what the checker notes of one server call. Only the
// checker's methods (this file) write it.
type flowWatch struct {
	inFlight bool // an in-flight answer was heard
	// reserveRejected: the store rejected the reserve for good.
	reserveRejected bool
	inFlightNow     time.Time // the store's time of the first
	lastNow         time.Time // the store's time of the latest reserve answer
	waited          int64     // virtual time spent in the waits the host performed

	ended   int64          // how the action ended, plus one (0: it has not)
	outcome core.EventKind // the first event applied once the action ended (0: none yet)
	code    string         // the error code the action gave with "not executed"
	// refused: the last outcome applied was refused for good (by the core
	// or the store), and the next apply must hand the key to the
	// reconciler.
	refused     core.EventKind
	leaseEnd    int64 // the lease as the host reckons it (virtual), once granted
	lostByBeat  bool  // a heartbeat found the record no longer the attempt's
	told        bool  // the action was told its lease is lost
	leaseMargin int64
}

// flowEffect hears the host start an EffectApply of c's Flow.
func (c *checker) flowEffect(call *serverCall, eff *idem.Effect) {
	fw := call.watch
	if fw.refused != 0 {
		if eff.Event.Kind != core.EventMarkUnknown || eff.Event.Token != call.token {
			c.failAs(invExecutor, call.scope, "attempt %d's %v was refused for good, and its Flow then applied %v, not a MarkUnknown that hands the key to the reconciler",
				call.token, fw.refused, eff.Event.Kind)
		}
		fw.refused = 0
		return
	}
	if fw.ended == 0 || fw.outcome != 0 {
		return
	}
	fw.outcome = eff.Event.Kind
	want := core.EventMarkUnknown
	switch fw.ended - 1 {
	case actionCompleted:
		want = core.EventComplete
	case actionNotExecuted:
		want = core.EventFail
	}
	switch {
	case eff.Event.Kind != want:
		c.failAs(invExecutor, call.scope, "attempt %d's action ended (%s), and its outcome was applied as %v, not %v",
			call.token, actionEnding(fw.ended-1), eff.Event.Kind, want)
	case eff.Event.Token != call.token:
		c.failAs(invExecutor, call.scope, "attempt %d's outcome was applied with token %d", call.token, eff.Event.Token)
	case !eff.Detached:
		c.failAs(invExecutor, call.scope, "attempt %d's outcome (%v) was to be applied on its client's context: a client that hangs up would stop it", call.token, eff.Event.Kind)
	case want == core.EventFail && string(eff.Event.ErrorCode) != codeKept(fw.code):
		c.failAs(invExecutor, call.scope, "attempt %d did not execute, with the code %q, and its Fail carries %q (want %q: the code, or the default where it is not a token of 1 to 64 bytes)",
			call.token, fw.code, eff.Event.ErrorCode, codeKept(fw.code))
	}
}

// codeKept is the error code a Fail carries for an action that gave code:
// the code itself when it is an RFC 9110 token of at most 64 bytes (the
// checker's own reading of the rule), else none (the core's default).
func codeKept(code string) string {
	if !codeTakeable(code) {
		return ""
	}
	return code
}

// flowHeard hears the answer to an apply of c's Flow, sent at sent. An
// outcome refused for good must be followed by a MarkUnknown; the Flow
// never asks the core for a Fail or a MarkUnknown the core refuses.
func (c *checker) flowHeard(call *serverCall, ev core.EventKind, sent int64, a *store.Applied, err error) {
	if ev != core.EventReserve {
		coreRefused := err != nil && store.BadInput(err)
		switch {
		case coreRefused && (ev == core.EventFail || ev == core.EventMarkUnknown):
			c.failAs(invExecutor, call.scope, "attempt %d's %v was refused by the core: %v", call.token, ev, err)
		case coreRefused || errors.Is(err, store.ErrRejected):
			if ev == core.EventComplete || ev == core.EventFail {
				call.watch.refused = ev
			}
		}
		return
	}
	fw := call.watch
	if err != nil {
		fw.reserveRejected = errors.Is(err, store.ErrRejected)
		return
	}
	fw.lastNow = a.Now
	switch a.Transition.Decision.Kind {
	case core.DecisionInFlight:
		if !fw.inFlight {
			fw.inFlight, fw.inFlightNow = true, a.Now
		}
	case core.DecisionExecute:
		fw.leaseEnd = sent + int64(a.Record.LockedUntil.Sub(a.Now))
		fw.leaseMargin = int64(leaseMarginMax(c.w.policy.LeaseDuration))
	}
}

// flowWait hears the host start an EffectWait of c's Flow: no wait may go
// past the in-flight wait, counted from the first (a host whose waits are
// cut short by writes that do not settle the key waits the rest, no more).
func (c *checker) flowWait(call *serverCall, eff *idem.Effect) {
	if fw := call.watch; fw.waited+int64(eff.Wait) > int64(c.w.policy.InFlightWait) {
		c.failAs(invExecutor, call.scope, "asked to wait %v more after waiting %v for an attempt in flight: past the in-flight wait of %v",
			eff.Wait, time.Duration(fw.waited), c.w.policy.InFlightWait)
	}
}

// flowWaited hears a wait of c's end after it began at start.
func (c *checker) flowWaited(call *serverCall, start int64) { call.watch.waited += c.w.now - start }

// flowBeat hears the answer to a heartbeat of c sent at sent, as the host
// took it (err: the store's, or the beat's timeout), once the host's Lease
// has heard it too.
func (c *checker) flowBeat(call *serverCall, sent int64, a *store.Applied, err error) {
	fw := call.watch
	switch {
	case err != nil:
	case a.Transition.Decision.Kind == core.DecisionExtended:
		fw.leaseEnd = sent + int64(a.Record.LockedUntil.Sub(a.Now)) // the end as last heard, as the host keeps it
	default:
		fw.lostByBeat = true
		return
	}
	c.leaseKept(call)
}

// leaseKept holds the host's Lease, as it stands, to the lease the
// checker reckons for c: the action is to be told (TellBy) the documented
// margin (a twentieth of the lease, at most a second: Executor.Do) before
// the end of the lease from when the call that granted or last extended it
// was sent; not later, which would let it run past the lease the sweeper
// and the reconciler go by, and not earlier, which would cancel it while
// its lease runs.
func (c *checker) leaseKept(call *serverCall) {
	fw := call.watch
	lease := c.w.policy.LeaseDuration
	margin := int64(min(lease/20, time.Second))
	tellBy := int64(call.lease.TellBy().Sub(epoch))
	switch {
	case tellBy > fw.leaseEnd-margin:
		c.failAs(invExecutor, call.scope, "attempt %d is to be told at %s that its lease is lost, later than a margin before the lease's end at %s (from when the call that granted it was sent)",
			call.token, fmtTime(tellBy), fmtTime(fw.leaseEnd))
	case tellBy < fw.leaseEnd-margin:
		c.failAs(invExecutor, call.scope, "attempt %d is to be told at %s that its lease is lost, %v before the margin before its lease's end at %s",
			call.token, fmtTime(tellBy), time.Duration(fw.leaseEnd-margin-tellBy), fmtTime(fw.leaseEnd))
	}
}

// told hears c's action told that its lease is lost.
func (c *checker) told(call *serverCall) {
	fw := call.watch
	fw.told = true
	switch now := c.w.now; {
	case !fw.lostByBeat && now < fw.leaseEnd-fw.leaseMargin:
		c.failAs(invExecutor, call.scope, "attempt %d was told its lease is lost %v before the end of the lease it last heard of (%s), though no heartbeat found it taken over",
			call.token, time.Duration(fw.leaseEnd-now), fmtTime(fw.leaseEnd))
	case now > fw.leaseEnd && !call.s.pausedOver(fw.leaseEnd-fw.leaseMargin, now):
		c.failAs(invExecutor, call.scope, "attempt %d was told its lease is lost at %s, after the lease ended at %s as its host reckons it",
			call.token, fmtTime(now), fmtTime(fw.leaseEnd))
	}
}

// actionEnded hears c's action end, how: an action that ran on past the
// end of its lease as the host reckons it was not told in time, unless its
// server was paused (a frozen process hears no timer).
func (c *checker) actionEnded(call *serverCall, how int64) {
	fw := call.watch
	fw.ended = how + 1
	s := call.s
	if now := c.w.now; fw.leaseEnd != 0 && now > fw.leaseEnd && !fw.told && !s.pausedOver(fw.leaseEnd-fw.leaseMargin, now) {
		c.failAs(invExecutor, call.scope, "attempt %d's lease ended at %s as its host reckons it, but its action ran on untold until %s",
			call.token, fmtTime(fw.leaseEnd), fmtTime(now))
	}
}

// flowDone hears c's Flow end (its effect EffectAnswer), before its answer
// is sent.
func (c *checker) flowDone(call *serverCall, eff *idem.Effect) {
	fw := call.watch
	panicked := fw.ended-1 == actionPanicked && fw.ended != 0
	switch {
	case fw.ended != 0 && fw.outcome == 0:
		c.failAs(invExecutor, call.scope, "attempt %d's action ended (%s), and its Flow ended without applying its outcome", call.token, actionEnding(fw.ended-1))
	case panicked && eff.Panic == nil:
		c.failAs(invExecutor, call.scope, "attempt %d's action panicked, and its Flow ended without raising the panic again", call.token)
	case !panicked && eff.Panic != nil:
		c.failAs(invExecutor, call.scope, "a Flow raised a panic (%v) its action did not", eff.Panic)
	}
	if fw.refused != 0 {
		c.failAs(invExecutor, call.scope, "attempt %d's %v was refused for good, and its Flow ended without handing the key to the reconciler", call.token, fw.refused)
	}
	_, err := call.call.Result()
	// AsType, not As: As's target escapes, an allocation every answer.
	e, isErr := errors.AsType[*idem.Error](err)
	if fw.reserveRejected && (!isErr || e.Code != idem.CodeStoreRejected) {
		c.failAs(invExecutor, call.scope, "the store rejected the reserve for good, and it was answered %v, not %s: a rejection is not an outage", err, idem.CodeStoreRejected)
		return
	}
	if call.att.gone || !isErr || e.Code != idem.CodeInProgress {
		return
	}
	wait := int64(c.w.policy.InFlightWait)
	storeWaited := int64(fw.lastNow.Sub(fw.inFlightNow))
	switch {
	case !fw.inFlight:
		c.failAs(invExecutor, call.scope, "answered in_progress, but the store never answered in flight")
	case fw.waited < wait && storeWaited < wait:
		c.failAs(invExecutor, call.scope, "answered in_progress after waiting %v (%v by the store's clock), before the in-flight wait of %v ran out",
			time.Duration(fw.waited), time.Duration(storeWaited), c.w.policy.InFlightWait)
	}
}

func actionEnding(how int64) string {
	switch how {
	case actionCompleted:
		return "a response"
	case actionNotExecuted:
		return "not executed"
	case actionPanicked:
		return "a panic"
	}
	return "may have executed"
}
