package sim

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// liveRuleWorld is a live run that is never started, with one request, for
// the tests that call one of its checkers with a Do's state made by hand.
// Its clock is real time: the cases sit an hour from their boundaries.
func liveRuleWorld(t *testing.T) (*live, *request) {
	t.Helper()
	cfg := ConfigDefault()
	cfg.Faults, cfg.DrawLifecycle, cfg.Requests = 0, false, 1
	l := newLive(cfg.scaled(LiveScale))
	l.w.start()
	return l, l.w.clients[0].makeRequest()
}

// TestExtendedHeartbeatGrantsAWholeLease: a heartbeat answered Extended
// leaves the lease at least a lease after the store's now (longer is a
// lease that never shrinks); a nanosecond short breaks invariant 11.
// Answers other than Extended, and store errors, promise no lease.
func TestExtendedHeartbeatGrantsAWholeLease(t *testing.T) {
	w, _ := ruleWorld(t, 1)
	lease := w.policy.LeaseDuration
	now := epoch.Add(time.Hour)
	for _, c := range []struct {
		what string
		d    core.DecisionKind
		end  time.Time
		err  error
		want int
	}{
		{"Extended to now + lease", core.DecisionExtended, now.Add(lease), nil, -1},
		{"Extended to a later lease", core.DecisionExtended, now.Add(2 * lease), nil, -1},
		{"Extended to a nanosecond short of now + lease", core.DecisionExtended, now.Add(lease - 1), nil, invExecutor},
		{"Extended to a lease still running, half a lease", core.DecisionExtended, now.Add(lease / 2), nil, invExecutor},
		{"Conflict", core.DecisionConflict, now.Add(lease / 2), nil, -1},
		{"a store error", core.DecisionExtended, now.Add(lease / 2), errStoreDown, -1},
	} {
		a := &store.Applied{Now: now, Record: core.Record{Token: 7, LockedUntil: c.end}, Transition: core.Transition{Decision: core.Decision{Kind: c.d}}}
		w.check.extension(0, core.EventHeartbeat, a, c.err)
		expect(t, w, c.want, "a heartbeat answered "+c.what)
	}
}

// TestLeaseCancelledOnlyOnceTheExtendedLeaseEnds: an action cancelled for
// a lost lease while the lease its heartbeats extended it to still runs
// (past its first lease's end) breaks invariant 11; within the margin
// before the lease's end, or after it, it is told in time.
func TestLeaseCancelledOnlyOnceTheExtendedLeaseEnds(t *testing.T) {
	l, req := liveRuleWorld(t)
	margin := leaseMarginMax(l.w.policy.LeaseDuration)
	for _, c := range []struct {
		what     string
		leaseEnd time.Duration // from now
		reckoned time.Duration // how long the call that granted it took to reach the store
		want     int
	}{
		{"an hour before the extended lease ends", time.Hour, 0, invExecutor},
		{"within the margin before the extended lease ends", margin / 2, 0, -1},
		{"after the extended lease ended", -time.Second, 0, -1},
		{"as the lease ends, reckoned from a send an hour before the store applied it", time.Hour, time.Hour, -1},
		{"half an hour before the lease ends, reckoned from the send", time.Hour, time.Hour / 2, invExecutor},
	} {
		now := l.now()
		call := &liveCall{l: l, req: req, token: 7, firstEnd: now.Add(-time.Hour), leaseEnd: now.Add(c.leaseEnd), reckoned: c.reckoned}
		l.leaseCancelled(call)
		expect(t, l.w, c.want, "cancelled "+c.what)
	}
	// An extension on its way to Do when the older lease ended: Do acted on
	// the older lease, rightly, if the extension was heard within the
	// settle time before that end; one heard long before is Do's to keep.
	settle := max(l.w.policy.LeaseDuration/10, 10*time.Millisecond)
	for _, c := range []struct {
		what    string
		heardAt time.Duration // before the older lease's end
		want    int
	}{
		{"an extension heard just before the older lease ended", settle / 2, -1},
		{"an extension heard long before the older lease ended", 2 * settle, invExecutor},
	} {
		now := l.now()
		oldEnd := now.Add(margin / 2) // within the margin: Do's timer fires now
		call := &liveCall{l: l, req: req, token: 7, firstEnd: oldEnd, leaseEnd: now.Add(time.Hour),
			prevReckoned: oldEnd, extendedAt: oldEnd.Add(-margin - c.heardAt)}
		l.leaseCancelled(call)
		expect(t, l.w, c.want, "cancelled after "+c.what)
	}
}

// TestLeaseReckonedFromTheSend: what a Do's attempt hears of its lease is
// the lease its reserve granted, then each later one an Extended
// heartbeat granted, each reckoned from when its call was sent, as Do
// reckons it: earlier than the store's lease end by the time the call took
// to reach the store.
func TestLeaseReckonedFromTheSend(t *testing.T) {
	l, req := liveRuleWorld(t)
	call := &liveCall{l: l, req: req}
	sent := epoch.Add(time.Hour)
	lease := l.w.policy.LeaseDuration
	granted := func(d core.DecisionKind, at time.Duration) *store.Applied {
		now := sent.Add(at)
		return &store.Applied{Now: now, Record: core.Record{Token: 7, LockedUntil: now.Add(lease)}, Transition: core.Transition{Decision: core.Decision{Kind: d, Token: 7}}}
	}
	l.heard(call, core.Event{Kind: core.EventReserve}, granted(core.DecisionExecute, 3*time.Millisecond), nil, sent)
	if call.reckoned != 3*time.Millisecond {
		t.Fatalf("a reserve that reached the store 3 ms after its send: reckoned %v earlier", call.reckoned)
	}
	call.acting, call.leaseEnd = true, sent.Add(3*time.Millisecond+lease)
	l.heard(call, core.Event{Kind: core.EventHeartbeat, Token: 7}, granted(core.DecisionExtended, 5*time.Millisecond), nil, sent)
	if call.reckoned != 5*time.Millisecond || !call.leaseEnd.Equal(sent.Add(5*time.Millisecond+lease)) {
		t.Fatalf("a heartbeat that reached the store 5 ms after its send: lease end %v, reckoned %v earlier", call.leaseEnd, call.reckoned)
	}
	l.heard(call, core.Event{Kind: core.EventHeartbeat, Token: 7}, granted(core.DecisionExtended, -lease), nil, sent.Add(-lease-time.Second))
	if call.reckoned != 5*time.Millisecond {
		t.Fatalf("a heartbeat that granted no later lease changed the reckoning to %v", call.reckoned)
	}
	expect(t, l.w, -1, "what a Do heard")
}

// TestSuccessIsAnOutcome: a success Do returns is an execution or a
// replay, with a status HTTP can send (200 to 599); anything else is a
// failure answered as success (invariant 7), and not read further.
func TestSuccessIsAnOutcome(t *testing.T) {
	l, req := liveRuleWorld(t)
	call := &liveCall{l: l, req: req}
	for _, c := range []struct {
		kind   idem.ResultKind
		status int
		want   int
	}{
		{idem.ResultExecuted, 201, -1},
		{idem.ResultReplayed, 200, -1},
		{idem.ResultExecuted, 599, -1},
		{0, 201, 7},
		{idem.ResultExecuted, 0, 7},
		{idem.ResultReplayed, 199, 7},
		{idem.ResultExecuted, 600, 7},
	} {
		res := idem.Result{Kind: c.kind, Response: core.Response{StatusCode: c.status}}
		if ok := l.checkResult(call, res, nil, false); ok != (c.want < 0) {
			t.Errorf("kind %v status %d: read on %v", c.kind, c.status, ok)
		}
		expect(t, l.w, c.want, fmt.Sprintf("a success of kind %v, status %d", c.kind, c.status))
	}
}

// TestInFlightAnswerByThePolicy: an answer that another attempt holds the
// key has the status the policy asks for, 409 or 202 (invariant 11),
// whichever it carries; an answer of another code is not one.
func TestInFlightAnswerByThePolicy(t *testing.T) {
	w, _ := ruleWorld(t, 1)
	for _, policy := range []core.InFlightAnswer{core.InFlightConflict, core.InFlightAccepted} {
		w.policy.InFlightAnswer = policy
		want := map[core.InFlightAnswer]int{core.InFlightConflict: http.StatusConflict, core.InFlightAccepted: http.StatusAccepted}[policy]
		for _, status := range []int{http.StatusConflict, http.StatusAccepted} {
			err := fmt.Errorf("served: %w", &idem.Error{Code: idem.CodeInProgress, Status: status, RetryAfter: time.Second})
			if !w.check.inFlightAnswer(0, err) {
				t.Errorf("policy %v: an in-flight answer with status %d is not taken for one", policy, status)
			}
			inv := -1
			if status != want {
				inv = invExecutor
			}
			expect(t, w, inv, fmt.Sprintf("policy %v, an in-flight answer with status %d", policy, status))
		}
		if w.check.inFlightAnswer(0, &idem.Error{Code: idem.CodeKeyMisuse, Status: http.StatusUnprocessableEntity}) {
			t.Errorf("policy %v: a key misuse answer taken for an in-flight one", policy)
		}
		expect(t, w, -1, "a key misuse answer")
	}
}
