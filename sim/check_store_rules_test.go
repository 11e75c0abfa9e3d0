package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/refmodel"
	"github.com/idemkit/idem/store"
)

// ownerUpdate is a server's update of prev to after by event ev of prev's
// attempt, at the store's time now, as the store hands it to the
// lifecycle checker (the event itself unknown: the load-then-write path).
func ownerUpdate(ev core.EventKind, prev, after *core.Record, now time.Time) *writeSeen {
	m := &opMeta{actor: ActorServer, event: ev, attempt: prev.Token, now: now}
	return &writeSeen{m: m, scope: 0, prev: prev, after: *after, kind: core.WriteUpdate,
		expect: core.Write{Kind: core.WriteUpdate, ExpectVersion: prev.Version, ExpectToken: prev.Token}, now: now}
}

// TestHeartbeatWritesExactlyOneLease: a heartbeat's update bumps the
// version by exactly one and leaves the lease at exactly now + lease, or
// where it was if that is later (a clock that stepped back): anything
// else, shorter or longer, breaks invariant 8.
func TestHeartbeatWritesExactlyOneLease(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	lease := w.policy.LeaseDuration
	now := epoch.Add(time.Hour)
	for _, c := range []struct {
		what      string
		prevLease time.Time
		lease     time.Time
		version   uint64 // after a write over version 3
		want      int
	}{
		{"now + lease", now.Add(lease / 2), now.Add(lease), 4, -1},
		{"a nanosecond short of now + lease", now.Add(lease / 2), now.Add(lease - 1), 4, invLifecycle},
		{"a nanosecond past now + lease", now.Add(lease / 2), now.Add(lease + 1), 4, invLifecycle},
		{"two leases", now.Add(lease / 2), now.Add(2 * lease), 4, invLifecycle},
		{"a later lease kept", now.Add(2 * lease), now.Add(2 * lease), 4, -1},
		{"a later lease shortened to now + lease", now.Add(2 * lease), now.Add(lease), 4, invLifecycle},
		{"the version kept", now.Add(lease / 2), now.Add(lease), 3, invLifecycle},
		{"the version bumped by two", now.Add(lease / 2), now.Add(lease), 5, invLifecycle},
	} {
		prev := core.Record{Scope: reqs[0].key, Status: core.StatusInProgress, Fingerprint: reqs[0].fp, Token: 7, Version: 3, CreatedAt: epoch, LockedUntil: c.prevLease, ExpiresAt: epoch.Add(w.policy.TTL)}
		after := prev
		after.Version, after.LockedUntil = c.version, c.lease
		w.check.life.written(ownerUpdate(core.EventHeartbeat, &prev, &after, now))
		expect(t, w, c.want, "a heartbeat leaving "+c.what)
	}
}

// TestVersionBumpedByOneWhateverTheEvent: a write whose event the checker
// does not know (a live run's server: the model cannot say what it
// leaves) is still held to the version one above the record's, neither
// kept nor bumped by two.
func TestVersionBumpedByOneWhateverTheEvent(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	now := epoch.Add(time.Hour)
	for version, want := range map[uint64]int{3: invLifecycle, 4: -1, 5: invLifecycle} {
		prev := core.Record{Scope: reqs[0].key, Status: core.StatusInProgress, Fingerprint: reqs[0].fp, Token: 7, Version: 3, CreatedAt: epoch, LockedUntil: now, ExpiresAt: epoch.Add(w.policy.TTL)}
		after := prev
		after.Version, after.LockedUntil = version, now.Add(w.policy.LeaseDuration)
		w.check.life.written(ownerUpdate(core.EventInvalid, &prev, &after, now))
		expect(t, w, want, fmt.Sprintf("an update of an unknown event writing version %d over version 3", version))
	}
}

// TestResolveGivesUpAtExactlyTheMaximum: the reconciler's still-unknown
// answer that brings a record to the policy's maximum gives it up (no
// longer scheduled); one short of it schedules the next look at base *
// 2^n; either the other way breaks invariant 8.
func TestResolveGivesUpAtExactlyTheMaximum(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	p := &w.policy
	max := p.ReconcileAttemptsMax
	now := epoch.Add(time.Hour)
	for _, c := range []struct {
		what      string
		before    uint32 // the answers before this one
		scheduled bool   // the record this one leaves is still scheduled
		want      int
	}{
		{"the maximum, given up", max - 1, false, -1},
		{"the maximum, still scheduled", max - 1, true, invLifecycle},
		{"one short of the maximum, scheduled", max - 2, true, -1},
		{"one short of the maximum, given up", max - 2, false, invLifecycle},
	} {
		prev := core.Record{Scope: reqs[0].key, Status: core.StatusUnknown, Fingerprint: reqs[0].fp, Token: 7, Version: 5, CreatedAt: epoch,
			LockedUntil: epoch.Add(time.Minute), ReconcileAfter: now, ReconcileAttempts: c.before, ExpiresAt: epoch.Add(p.TTL)}
		after := prev
		after.Version, after.ReconcileAttempts, after.ReconcileAfter = 6, c.before+1, time.Time{}
		if c.scheduled {
			after.ReconcileAfter = now.Add(refmodel.ReconcileBackoff(p, c.before))
		}
		*w.check.life.counter(0) = c.before
		finding := &findingSeen{set: true, scope: 0, token: 7, verdict: core.VerdictStillUnknown}
		m := &opMeta{actor: ActorReconciler, finding: finding, now: now}
		w.check.life.written(&writeSeen{m: m, scope: 0, prev: &prev, after: after, kind: core.WriteUpdate,
			expect: core.Write{Kind: core.WriteUpdate, ExpectVersion: 5, ExpectToken: 7}, now: now})
		expect(t, w, c.want, fmt.Sprintf("still unknown for the %dth time of %d: %s", c.before+1, max, c.what))
	}
}

// TestResolveHeldToTheCheckedAttempt: a finding about one attempt settles
// only that attempt's unknown record; written over the record of a later
// attempt (its finding arrived late) it breaks invariant 8.
func TestResolveHeldToTheCheckedAttempt(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	now := epoch.Add(time.Hour)
	stored := paidResponse(reqs[0])
	for _, c := range []struct {
		what  string
		about core.Token
		want  int
	}{
		{"the record's attempt", 7, -1},
		{"an earlier attempt", 6, invLifecycle},
	} {
		prev := core.Record{Scope: reqs[0].key, Status: core.StatusUnknown, Fingerprint: reqs[0].fp, Token: 7, Version: 5, CreatedAt: epoch,
			LockedUntil: epoch.Add(time.Minute), ReconcileAfter: now, ExpiresAt: epoch.Add(w.policy.TTL)}
		after := prev
		after.Status, after.Version, after.Response = core.StatusCompleted, 6, stored
		after.CompletedAt, after.ExpiresAt, after.ReconcileAfter, after.LockedUntil = now, now.Add(w.policy.TTL), time.Time{}, time.Time{}
		finding := &findingSeen{set: true, scope: 0, token: c.about, verdict: core.VerdictExecuted, response: stored}
		m := &opMeta{actor: ActorReconciler, finding: finding, now: now}
		w.check.life.written(&writeSeen{m: m, scope: 0, prev: &prev, after: after, kind: core.WriteUpdate,
			expect: core.Write{Kind: core.WriteUpdate, ExpectVersion: 5, ExpectToken: 7}, now: now})
		expect(t, w, c.want, "a finding about "+c.what+" completing the record")
	}
}

// TestOwnerEventsThatWriteNothing: on the fast path, an owner's event the
// table says changes its in_progress record (Complete, Fail, MarkUnknown,
// Heartbeat) must have written; one answered as the table answers that
// wrote nothing breaks invariant 8. Another attempt's event writes
// nothing, rightly.
func TestOwnerEventsThatWriteNothing(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	now := epoch.Add(time.Hour)
	w.shadow[0] = core.Record{Scope: reqs[0].key, Status: core.StatusInProgress, Fingerprint: reqs[0].fp, Token: 7, Version: 1, CreatedAt: epoch, LockedUntil: now.Add(time.Minute)}
	for kind, answer := range map[core.EventKind]core.DecisionKind{
		core.EventComplete: core.DecisionCompleted, core.EventFail: core.DecisionFailed,
		core.EventMarkUnknown: core.DecisionMarkedUnknown, core.EventHeartbeat: core.DecisionExtended,
	} {
		for _, token := range []core.Token{7, 6} {
			ev := core.Event{Kind: kind, Token: token, Now: now, Response: paidResponse(reqs[0])}
			a := store.Applied{Now: now, Before: core.StatusInProgress, Record: w.shadow[0]}
			a.Transition.Decision.Kind = answer
			want := invLifecycle
			if token != 7 {
				a.Transition.Decision.Kind, want = core.DecisionStale, -1
			}
			w.check.life.decided(&opMeta{actor: ActorServer, event: kind, attempt: token}, 0, &w.shadow[0], &ev, &a)
			expect(t, w, want, fmt.Sprintf("%v of attempt %d on attempt 7's record, answered %v, unwritten", kind, token, a.Transition.Decision.Kind))
		}
	}
}
