package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// The rules of check_flow.go, each at its boundary, on server calls whose
// state is made by hand: every rule fires on the bug it is for, and not on
// the behaviour next to it.

// flowRuleCall is a server call of req on w's first server, as attempt 7.
func flowRuleCall(t *testing.T, w *world, req *request) *serverCall {
	t.Helper()
	f, err := w.ex.Begin(idem.Request{Scope: req.key, Fingerprint: req.fp})
	if err != nil {
		t.Fatal(err)
	}
	return &serverCall{s: w.servers[0], att: &attempt{req: req}, scope: req.scope, token: 7, call: f, watch: new(flowWatch)}
}

// TestOutcomeRules: once the action ended, the first apply is its outcome
// (Complete, Fail, MarkUnknown by how it ended), with its token, detached
// from the client; and the flow does not end without one.
func TestOutcomeRules(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	for _, c := range []struct {
		what     string
		how      int64
		ev       core.EventKind
		token    core.Token
		detached bool
		want     int
	}{
		{"a response completed", actionCompleted, core.EventComplete, 7, true, -1},
		{"not executed failed", actionNotExecuted, core.EventFail, 7, true, -1},
		{"an error marked unknown", actionUnknown, core.EventMarkUnknown, 7, true, -1},
		{"a panic marked unknown", actionPanicked, core.EventMarkUnknown, 7, true, -1},
		{"not executed marked unknown", actionNotExecuted, core.EventMarkUnknown, 7, true, invExecutor},
		{"a response failed", actionCompleted, core.EventFail, 7, true, invExecutor},
		{"a panic completed", actionPanicked, core.EventComplete, 7, true, invExecutor},
		{"an outcome with another token", actionCompleted, core.EventComplete, 8, true, invExecutor},
		{"an outcome on the client's context", actionCompleted, core.EventComplete, 7, false, invExecutor},
	} {
		call := flowRuleCall(t, w, reqs[0])
		w.check.actionEnded(call, c.how)
		w.check.flowEffect(call, &idem.Effect{Kind: idem.EffectApply, Event: core.Event{Kind: c.ev, Token: c.token}, Detached: c.detached})
		expect(t, w, c.want, c.what)
		// Only the first apply after the action is its outcome.
		w.check.flowEffect(call, &idem.Effect{Kind: idem.EffectApply, Event: core.Event{Kind: core.EventMarkUnknown, Token: 7}})
		expect(t, w, -1, c.what+", then another apply")
	}
	call := flowRuleCall(t, w, reqs[0])
	w.check.flowEffect(call, &idem.Effect{Kind: idem.EffectApply, Event: core.Event{Kind: core.EventReserve}})
	expect(t, w, -1, "a reserve before any action")
	w.check.actionEnded(call, actionCompleted)
	w.check.flowDone(call, &idem.Effect{Kind: idem.EffectAnswer})
	expect(t, w, invExecutor, "a flow that ended without the outcome of its action")
}

// TestPanicRules: a panic is raised again (EffectAnswer's Panic) exactly when
// the action panicked.
func TestPanicRules(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	for _, c := range []struct {
		what  string
		how   int64
		panic any
		want  int
	}{
		{"a panic raised again", actionPanicked, "boom", -1},
		{"a panic swallowed", actionPanicked, nil, invExecutor},
		{"a panic raised that the action did not", actionUnknown, "boom", invExecutor},
		{"no panic, none raised", actionUnknown, nil, -1},
	} {
		call := flowRuleCall(t, w, reqs[0])
		w.check.actionEnded(call, c.how)
		w.check.flowEffect(call, &idem.Effect{Kind: idem.EffectApply, Event: core.Event{Kind: core.EventMarkUnknown, Token: 7}, Detached: true})
		w.check.flowDone(call, &idem.Effect{Kind: idem.EffectAnswer, Panic: c.panic})
		expect(t, w, c.want, c.what)
	}
}

// inProgressFlow is call's Flow driven by hand to an in_progress answer:
// in flight at the store's time at, then, after a wait of waited, in
// flight again at the store's time at+storeWaited.
func inProgressFlow(t *testing.T, w *world, call *serverCall, at time.Time, waited, storeWaited time.Duration) {
	t.Helper()
	f := call.call
	inFlight := func(now time.Time) {
		a := &store.Applied{Now: now, Record: core.Record{Status: core.StatusInProgress, Token: 9, Version: 1},
			Transition: core.Transition{Decision: core.Decision{Kind: core.DecisionInFlight, RetryAfter: time.Second}}}
		w.check.flowHeard(call, core.EventReserve, 0, a, nil)
		f.Applied(a, nil)
	}
	inFlight(at)
	if f.Next().Kind != idem.EffectWait {
		t.Fatalf("the flow did not wait: %v", f.Next().Kind)
	}
	call.watch.waited += int64(waited)
	f.Waited(f.Next().Wait) // the flow's own clock: its whole wait
	inFlight(at.Add(storeWaited))
	if !f.Done() {
		t.Fatalf("the flow is not done: %v", f.Next().Kind)
	}
}

// TestAnswerTimelinessRules: an in_progress answer comes only once the
// in-flight wait ran out, by the host's clock or the store's; a wait that
// would go past it is refused.
func TestAnswerTimelinessRules(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	wait := w.policy.InFlightWait
	at := epoch.Add(time.Hour)
	for _, c := range []struct {
		what                string
		waited, storeWaited time.Duration
		want                int
	}{
		{"after the whole wait on both clocks", wait, wait, -1},
		{"after the whole wait on the host's clock", wait, 0, -1},
		{"after the whole wait on the store's clock", 0, wait, -1},
		{"a nanosecond short on both clocks", wait - 1, wait - 1, invExecutor},
		{"at once", 0, 0, invExecutor},
	} {
		call := flowRuleCall(t, w, reqs[0])
		inProgressFlow(t, w, call, at, c.waited, c.storeWaited)
		w.check.flowDone(call, call.call.Next())
		expect(t, w, c.want, "in_progress "+c.what)
	}
	call := flowRuleCall(t, w, reqs[0])
	inProgressFlow(t, w, call, at, 0, 0)
	call.att.gone = true
	w.check.flowDone(call, call.call.Next())
	expect(t, w, -1, "in_progress at once to a client that hung up")

	call = flowRuleCall(t, w, reqs[0])
	call.watch.waited = int64(wait / 2)
	w.check.flowWait(call, &idem.Effect{Kind: idem.EffectWait, Wait: wait / 2})
	expect(t, w, -1, "a wait for the rest of the in-flight wait")
	w.check.flowWait(call, &idem.Effect{Kind: idem.EffectWait, Wait: wait/2 + 1})
	expect(t, w, invExecutor, "a wait a nanosecond past the in-flight wait")
}

// TestLeaseRules: the host's lease tells the action the documented margin
// before the lease's end as reckoned from the send of the call that
// granted or extended it; the action is told then, not while the lease
// runs, and not after it ended (unless its server was paused).
func TestLeaseRules(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	lease := w.policy.LeaseDuration
	margin := min(lease/20, time.Second)
	const sent = int64(time.Hour)
	granted := func(call *serverCall, sentAt int64) {
		a := &store.Applied{Now: epoch.Add(time.Hour + time.Millisecond), Record: core.Record{Status: core.StatusInProgress, Token: 7, Version: 1,
			LockedUntil: epoch.Add(time.Hour + time.Millisecond + lease)}, Transition: core.Transition{Decision: core.Decision{Kind: core.DecisionExecute, Token: 7}}}
		w.check.flowHeard(call, core.EventReserve, sentAt, a, nil)
		call.call.Applied(a, nil)
		call.lease = call.call.Lease(hostTime(sent))
	}
	call := flowRuleCall(t, w, reqs[0])
	granted(call, sent)
	w.check.leaseKept(call)
	expect(t, w, -1, "a lease from the reserve's send")
	call = flowRuleCall(t, w, reqs[0])
	granted(call, sent-int64(time.Millisecond))
	w.check.leaseKept(call)
	expect(t, w, invExecutor, "a lease reckoned from a millisecond after the send")
	call = flowRuleCall(t, w, reqs[0])
	granted(call, sent+int64(time.Millisecond))
	w.check.leaseKept(call)
	expect(t, w, invExecutor, "a lease a millisecond shorter than from the send")

	end := sent + int64(lease)
	for _, c := range []struct {
		what   string
		at     int64
		byBeat bool
		paused bool
		want   int
	}{
		{"at the margin before the end", end - int64(margin), false, false, -1},
		{"a millisecond before the margin", end - int64(margin) - int64(2*time.Millisecond), false, false, invExecutor},
		{"early, after a heartbeat found it taken over", end - int64(lease/2), true, false, -1},
		{"a nanosecond after the end", end + 1, false, false, invExecutor},
		{"after the end, on a paused server", end + int64(time.Second), false, true, -1},
	} {
		call := flowRuleCall(t, w, reqs[0])
		call.s.pausedFrom, call.s.pausedUntil = 0, 0
		if c.paused {
			call.s.pausedFrom, call.s.pausedUntil = end-int64(2*time.Second), end+int64(time.Second)
		}
		call.watch.leaseEnd, call.watch.leaseMargin, call.watch.lostByBeat = end, int64(leaseMarginMax(lease)), c.byBeat
		w.now = c.at
		w.check.told(call)
		expect(t, w, c.want, "told "+c.what)
	}
	call = flowRuleCall(t, w, reqs[0])
	call.s.pausedFrom, call.s.pausedUntil = 0, 0
	call.watch.leaseEnd, call.watch.leaseMargin = end, int64(leaseMarginMax(lease))
	w.now = end + 1
	w.check.actionEnded(call, actionUnknown)
	expect(t, w, invExecutor, "an action untold a nanosecond past its lease")
	call = flowRuleCall(t, w, reqs[0])
	call.watch.leaseEnd, call.watch.leaseMargin = end, int64(leaseMarginMax(lease))
	w.now = end
	w.check.actionEnded(call, actionUnknown)
	expect(t, w, -1, "an action that ended as its lease ended")
}

// TestOwnershipRule: an owner event the core accepts carries the token of
// the record it found, whatever the lease's state; a stale one answered
// Stale is fine.
func TestOwnershipRule(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	now := epoch.Add(time.Hour)
	expired := core.Record{Scope: reqs[0].key, Status: core.StatusInProgress, Token: 9, Version: 2, LockedUntil: now.Add(-time.Second)}
	for _, c := range []struct {
		what  string
		ev    core.EventKind
		token core.Token
		d     core.DecisionKind
		want  int
	}{
		{"its own completion past its lease", core.EventComplete, 9, core.DecisionCompleted, -1},
		{"another token's completion, refused", core.EventComplete, 7, core.DecisionStale, -1},
		{"another token's completion, accepted past the lease", core.EventComplete, 7, core.DecisionCompleted, 4},
		{"another token's failure, accepted", core.EventFail, 7, core.DecisionFailed, 4},
		{"another token's heartbeat, extended", core.EventHeartbeat, 7, core.DecisionExtended, 4},
		{"another token's mark, acknowledged", core.EventMarkUnknown, 7, core.DecisionAcknowledged, 4},
	} {
		ev := core.Event{Kind: c.ev, Token: c.token, Now: now}
		w.check.owned(0, &expired, &ev, c.d)
		expect(t, w, c.want, c.what)
	}
}

// TestRefusedOutcomeRules: an outcome the core refuses or the store rejects for
// good is followed by a MarkUnknown of the attempt (the key goes to the
// reconciler at once), never by the end of the flow; the Flow never hands
// the core a Fail or a MarkUnknown it refuses; a Fail keeps the action's
// error code where the rules take it, else the default.
func TestRefusedOutcomeRules(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	rejectedByStore := fmt.Errorf("rejected: %w", store.ErrRejected)
	refusedByCore := core.ErrInvalidErrorCode
	for _, c := range []struct {
		what string
		ev   core.EventKind
		err  error
		next core.EventKind // 0: the flow ends
		want int
	}{
		{"a completion the store rejected, then a mark", core.EventComplete, rejectedByStore, core.EventMarkUnknown, -1},
		{"a completion the core refused, then a mark", core.EventComplete, core.ErrResponseTooLarge, core.EventMarkUnknown, -1},
		{"a failure the store rejected, then a mark", core.EventFail, rejectedByStore, core.EventMarkUnknown, -1},
		{"a completion the store rejected, then the end", core.EventComplete, rejectedByStore, 0, invExecutor},
		{"a completion the store rejected, then a failure", core.EventComplete, rejectedByStore, core.EventFail, invExecutor},
		{"a failure the core refused", core.EventFail, refusedByCore, core.EventMarkUnknown, invExecutor},
		{"a mark the core refused", core.EventMarkUnknown, refusedByCore, 0, invExecutor},
		{"a completion the store failed (an outage), then the end", core.EventComplete, errStoreDown, 0, -1},
	} {
		call := flowRuleCall(t, w, reqs[0])
		w.check.flowHeard(call, c.ev, 0, &store.Applied{}, c.err)
		if c.next != 0 {
			w.check.flowEffect(call, &idem.Effect{Kind: idem.EffectApply, Event: core.Event{Kind: c.next, Token: 7}, Detached: true})
		} else {
			w.check.flowDone(call, &idem.Effect{Kind: idem.EffectAnswer})
		}
		expect(t, w, c.want, c.what)
	}
	for _, c := range []struct {
		action, fail string
		want         int
	}{
		{"gateway_refused", "gateway_refused", -1},
		{goodCodes[2], goodCodes[2], -1},
		{"", "", -1},
		{badCodes[0], "", -1},
		{"card declined", "", -1},
		{goodCodes[2], "", invExecutor},
		{"card declined", "card declined", invExecutor},
	} {
		call := flowRuleCall(t, w, reqs[0])
		call.watch.code = c.action
		w.check.actionEnded(call, actionNotExecuted)
		w.check.flowEffect(call, &idem.Effect{Kind: idem.EffectApply, Event: core.Event{Kind: core.EventFail, Token: 7, ErrorCode: core.ErrorCode(c.fail)}, Detached: true})
		expect(t, w, c.want, fmt.Sprintf("code %q failed with %q", c.action, c.fail))
	}
}

// TestRejectedReserveRule: a reserve the store rejected for good is
// answered as a rejection (idempotency_store_rejected), never as an outage.
func TestRejectedReserveRule(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	for _, c := range []struct {
		what string
		err  error
		want int
	}{
		{"a rejection answered as one", fmt.Errorf("constraint: %w", store.ErrRejected), -1},
		{"an outage answered as one", errStoreDown, -1},
	} {
		call := flowRuleCall(t, w, reqs[0])
		w.check.flowHeard(call, core.EventReserve, 0, nil, c.err)
		call.call.Applied(&store.Applied{}, c.err)
		w.check.flowDone(call, call.call.Next())
		expect(t, w, c.want, c.what)
	}
	call := flowRuleCall(t, w, reqs[0])
	w.check.flowHeard(call, core.EventReserve, 0, nil, fmt.Errorf("constraint: %w", store.ErrRejected))
	call.call.Applied(&store.Applied{}, errStoreDown) // the Flow told of an outage instead
	w.check.flowDone(call, call.call.Next())
	expect(t, w, invExecutor, "a refusal answered as an outage")
}
