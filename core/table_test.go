package core

import (
	"testing"
	"time"
)

// TestTransitionTable has one case per row of SPEC §5, named after it.
func TestTransitionTable(t *testing.T) {
	def := PolicyDefault()
	hard := def
	hard.Expiry = ExpiryHard
	evict := def
	evict.Fail = FailEvict
	lease, ttl := def.LeaseDuration, def.TTL

	type check func(t *testing.T, cur, next Record, d Decision)
	same := func(t *testing.T, cur, next Record, _ Decision) {
		t.Helper()
		if next.Describe() != cur.Describe() || !next.Response.Equal(cur.Response) {
			t.Fatalf("record changed:\n was %s\n now %s", cur.Describe(), next.Describe())
		}
	}
	status := func(s Status) check {
		return func(t *testing.T, cur, next Record, _ Decision) {
			t.Helper()
			if next.Status != s {
				t.Fatalf("status %v, want %v", next.Status, s)
			}
			if next.Status != StatusAbsent && next.Version != cur.Version+1 && cur.Exists() {
				t.Fatalf("version %d, want %d", next.Version, cur.Version+1)
			}
		}
	}
	all := func(cs ...check) check {
		return func(t *testing.T, cur, next Record, d Decision) {
			t.Helper()
			for _, c := range cs {
				c(t, cur, next, d)
			}
		}
	}
	newAttempt := func(token Token, now time.Time) check {
		return func(t *testing.T, _, next Record, d Decision) {
			t.Helper()
			if next.Token != token || d.Token != token {
				t.Fatalf("token record=%d decision=%d, want %d", next.Token, d.Token, token)
			}
			if !next.LockedUntil.Equal(now.Add(lease)) {
				t.Fatalf("locked_until %v, want %v", next.LockedUntil, now.Add(lease))
			}
		}
	}
	expiresAt := func(when time.Time) check {
		return func(t *testing.T, _, next Record, _ Decision) {
			t.Helper()
			if !next.ExpiresAt.Equal(when) {
				t.Fatalf("expires_at %v, want %v", next.ExpiresAt, when)
			}
		}
	}
	reconcileAfter := func(when time.Time, code ErrorCode) check {
		return func(t *testing.T, _, next Record, _ Decision) {
			t.Helper()
			if !next.ReconcileAfter.Equal(when) || next.LastErrorCode != code {
				t.Fatalf("reconcile_after=%v error=%q, want %v %q", next.ReconcileAfter, next.LastErrorCode, when, code)
			}
		}
	}
	replays := func(r Response) check {
		return func(t *testing.T, _, next Record, _ Decision) {
			t.Helper()
			if !next.Response.Equal(r) {
				t.Fatalf("replayed %s, want %s", next.Response.Describe(), r.Describe())
			}
		}
	}
	stores := func(r Response) check {
		return func(t *testing.T, _, next Record, _ Decision) {
			t.Helper()
			if !next.Response.Equal(r) {
				t.Fatalf("stored %s, want %s", next.Response.Describe(), r.Describe())
			}
		}
	}

	absent := Record{Scope: scopeA}
	ip := inProgress(7)
	completed := withStatus(ip, StatusCompleted)
	completed.ExpiresAt = at(ttl)
	failed := withStatus(ip, StatusFailedRetryable)
	unknown := withStatus(ip, StatusUnknown)
	expired := withStatus(ip, StatusExpired)
	tombstone := expired
	tombstone.ExpiresAt = at(ttl + def.TombstoneRetention)
	abandonedSoon := unknown
	// ipExtended holds a lease a heartbeat extended past what a heartbeat at
	// a minute (a clock that stepped back) would give.
	ipExtended := ip
	ipExtended.LockedUntil = at(time.Minute + 2*lease)
	// ipRetried runs again after the reconciler looked at an earlier
	// attempt three times (unknown, then not executed, then a retry).
	ipRetried := ip
	ipRetried.ReconcileAttempts = 3
	abandonedSoon.ReconcileAttempts = def.ReconcileAttemptsMax - 1

	reserve := func(now time.Time, fp Fingerprint, token Token) Event {
		return Event{Kind: EventReserve, Now: now, Fingerprint: fp, Token: token}
	}
	ownerEv := func(k EventKind, now time.Time, token Token) Event {
		return Event{Kind: k, Now: now, Token: token, Response: resp1, ErrorCode: "gateway_rejected"}
	}
	resolveEv := func(o Verdict, token Token) Event {
		return Event{Kind: EventResolve, Now: at(time.Hour), Token: token, Verdict: o, Response: resp2}
	}
	completeWith := func(r Response, token Token) Event {
		return Event{Kind: EventComplete, Now: at(time.Minute), Token: token, Response: r}
	}
	sweepAt := func(now time.Time) Event { return Event{Kind: EventSweep, Now: now} }

	cases := []struct {
		name   string
		policy Policy
		cur    Record
		ev     Event
		want   DecisionKind
		write  WriteKind
		check  check
	}{
		// Reserve
		{"reserve/absent", def, absent, reserve(t0, fpA, 1), DecisionExecute, WriteInsert,
			all(status(StatusInProgress), newAttempt(1, t0), expiresAt(at(ttl)))},
		{"reserve/expired status", def, expired, reserve(at(time.Hour), fpB, 9), DecisionExecute, WriteUpdate,
			all(status(StatusInProgress), newAttempt(9, at(time.Hour)))},
		{"reserve/completed past expires_at, other payload", def, completed, reserve(at(ttl), fpB, 9), DecisionExecute, WriteUpdate,
			all(status(StatusInProgress), newAttempt(9, at(ttl)))},
		{"reserve/failed_retryable past expires_at", def, failed, reserve(at(ttl+time.Second), fpB, 9), DecisionExecute, WriteUpdate,
			all(status(StatusInProgress), newAttempt(9, at(ttl+time.Second)))},
		{"reserve/in_progress past expires_at is not dead", def, func() Record { r := ip; r.LockedUntil = at(ttl + lease); return r }(),
			reserve(at(ttl+time.Second), fpA, 9), DecisionInFlight, WriteNone, same},
		{"reserve/unknown past expires_at is not dead", def, unknown, reserve(at(ttl+time.Hour), fpB, 9), DecisionMismatch, WriteNone, same},
		{"reserve/mismatch in_progress", def, ip, reserve(at(time.Second), fpB, 9), DecisionMismatch, WriteNone, same},
		{"reserve/mismatch completed", def, completed, reserve(at(time.Hour), fpB, 9), DecisionMismatch, WriteNone, same},
		{"reserve/mismatch failed_retryable", def, failed, reserve(at(time.Hour), fpB, 9), DecisionMismatch, WriteNone, same},
		{"reserve/mismatch unknown", def, unknown, reserve(at(time.Hour), fpB, 9), DecisionMismatch, WriteNone, same},
		{"reserve/in_progress within lease", def, ip, reserve(at(lease-time.Nanosecond), fpA, 9), DecisionInFlight, WriteNone, same},
		{"reserve/in_progress at lease end becomes unknown", def, ip, reserve(at(lease), fpA, 9), DecisionReconciling, WriteUpdate,
			all(status(StatusUnknown), reconcileAfter(at(lease), ErrorCodeLeaseExpired))},
		{"reserve/completed replays", def, completed, reserve(at(time.Hour), fpA, 9), DecisionReplay, WriteNone, all(same, replays(resp1))},
		{"reserve/failed_retryable executes again", def, failed, reserve(at(time.Hour), fpA, 9), DecisionExecute, WriteUpdate,
			all(status(StatusInProgress), newAttempt(9, at(time.Hour)))},
		{"reserve/unknown reconciles", def, unknown, reserve(at(time.Hour), fpA, 9), DecisionReconciling, WriteNone, same},

		// Complete
		{"complete/in_progress", def, ip, completeWith(resp2, 7), DecisionCompleted, WriteUpdate,
			all(status(StatusCompleted), stores(resp2), expiresAt(at(time.Minute+ttl)))},
		{"complete/unknown by its owner", def, unknown, completeWith(resp1, 7), DecisionCompleted, WriteUpdate,
			all(status(StatusCompleted), stores(resp1))},
		{"complete/again same response", def, completed, completeWith(resp1, 7), DecisionAcknowledged, WriteNone, all(same, replays(resp1))},
		{"complete/again other response", def, completed, completeWith(resp2, 7), DecisionConflict, WriteNone, same},
		{"complete/stale token", def, ip, completeWith(resp1, 6), DecisionStale, WriteNone, same},
		{"complete/absent", def, absent, completeWith(resp1, 7), DecisionStale, WriteNone, same},
		{"complete/failed_retryable", def, failed, completeWith(resp1, 7), DecisionConflict, WriteNone, same},

		// Fail
		{"fail/in_progress keeps failed_retryable", def, ip, ownerEv(EventFail, at(time.Minute), 7), DecisionFailed, WriteUpdate,
			all(status(StatusFailedRetryable), expiresAt(at(time.Minute+ttl)))},
		{"fail/in_progress evicts by policy", evict, ip, ownerEv(EventFail, at(time.Minute), 7), DecisionFailed, WriteDelete, status(StatusAbsent)},
		{"fail/unknown by its owner", def, unknown, ownerEv(EventFail, at(time.Hour), 7), DecisionFailed, WriteUpdate, status(StatusFailedRetryable)},
		{"fail/stale token", def, ip, ownerEv(EventFail, at(time.Minute), 8), DecisionStale, WriteNone, same},
		{"fail/completed", def, completed, ownerEv(EventFail, at(time.Minute), 7), DecisionConflict, WriteNone, same},

		// MarkUnknown
		{"mark_unknown/in_progress", def, ip, ownerEv(EventMarkUnknown, at(time.Minute), 7), DecisionMarkedUnknown, WriteUpdate,
			all(status(StatusUnknown), reconcileAfter(at(time.Minute), "gateway_rejected"))},
		{"mark_unknown/stale token", def, ip, ownerEv(EventMarkUnknown, at(time.Minute), 3), DecisionStale, WriteNone, same},
		{"mark_unknown/unknown again", def, unknown, ownerEv(EventMarkUnknown, at(time.Minute), 7), DecisionAcknowledged, WriteNone, same},
		{"mark_unknown/completed", def, completed, ownerEv(EventMarkUnknown, at(time.Minute), 7), DecisionConflict, WriteNone, same},

		// Heartbeat
		{"heartbeat/in_progress extends", def, ip, ownerEv(EventHeartbeat, at(time.Minute), 7), DecisionExtended, WriteUpdate,
			func(t *testing.T, _, next Record, d Decision) {
				if !next.LockedUntil.Equal(at(time.Minute + lease)) {
					t.Fatalf("locked_until %v", next.LockedUntil)
				}
			}},
		{"heartbeat/a clock that stepped back never shrinks the lease", def, ipExtended, ownerEv(EventHeartbeat, at(time.Minute), 7), DecisionExtended, WriteUpdate,
			func(t *testing.T, _, next Record, d Decision) {
				if !next.LockedUntil.Equal(ipExtended.LockedUntil) {
					t.Fatalf("locked_until %v, was %v", next.LockedUntil, ipExtended.LockedUntil)
				}
			}},
		{"heartbeat/stale token", def, ip, ownerEv(EventHeartbeat, at(time.Minute), 8), DecisionStale, WriteNone, same},
		{"heartbeat/unknown", def, unknown, ownerEv(EventHeartbeat, at(time.Minute), 7), DecisionConflict, WriteNone, same},

		// Resolve
		{"resolve/executed", def, unknown, resolveEv(VerdictExecuted, 7), DecisionResolved, WriteUpdate,
			all(status(StatusCompleted), stores(resp2), expiresAt(at(time.Hour+ttl)))},
		{"resolve/not executed", def, unknown, resolveEv(VerdictNotExecuted, 7), DecisionResolved, WriteUpdate,
			all(status(StatusFailedRetryable), reconcileAfter(time.Time{}, ErrorCodeReconciled))},
		{"resolve/still unknown keeps why", def, unknown, func() Event { e := resolveEv(VerdictStillUnknown, 7); e.ErrorCode = "finding_invalid"; return e }(), DecisionRescheduled, WriteUpdate,
			func(t *testing.T, _, next Record, _ Decision) {
				if next.LastErrorCode != "finding_invalid" || next.ReconcileAttempts != 1 {
					t.Fatalf("last error %q, attempts %d", next.LastErrorCode, next.ReconcileAttempts)
				}
			}},
		{"resolve/still unknown backs off", def, unknown, resolveEv(VerdictStillUnknown, 7), DecisionRescheduled, WriteUpdate,
			all(status(StatusUnknown), func(t *testing.T, _, next Record, _ Decision) {
				if next.ReconcileAttempts != 1 || !next.ReconcileAfter.Equal(at(time.Hour+def.ReconcileBackoffBase)) {
					t.Fatalf("attempts=%d reconcile_after=%v", next.ReconcileAttempts, next.ReconcileAfter)
				}
			})},
		{"resolve/still unknown past max is abandoned", def, abandonedSoon, resolveEv(VerdictStillUnknown, 7), DecisionAbandoned, WriteUpdate,
			all(status(StatusUnknown), func(t *testing.T, _, next Record, _ Decision) {
				if next.ReconcileAttempts != def.ReconcileAttemptsMax || !next.ReconcileAfter.IsZero() {
					t.Fatalf("attempts=%d reconcile_after=%v", next.ReconcileAttempts, next.ReconcileAfter)
				}
			})},
		{"resolve/other status", def, completed, resolveEv(VerdictNotExecuted, 7), DecisionNotApplicable, WriteNone, same},
		{"resolve/in_progress", def, ip, resolveEv(VerdictExecuted, 7), DecisionNotApplicable, WriteNone, same},
		{"resolve/absent", def, absent, resolveEv(VerdictExecuted, 7), DecisionNotApplicable, WriteNone, same},
		{"resolve/another attempt", def, unknown, resolveEv(VerdictNotExecuted, 6), DecisionStale, WriteNone, same},

		// Sweep
		{"sweep/in_progress past lease", def, ip, sweepAt(at(lease)), DecisionLeaseExpired, WriteUpdate,
			all(status(StatusUnknown), reconcileAfter(at(lease), ErrorCodeLeaseExpired))},
		{"sweep/in_progress within lease", def, ip, sweepAt(at(time.Second)), DecisionNothingDue, WriteNone, same},
		{"sweep/lease expiry starts the reconciler's count afresh", def, ipRetried, sweepAt(at(lease)), DecisionLeaseExpired, WriteUpdate,
			func(t *testing.T, _, next Record, d Decision) {
				if next.ReconcileAttempts != 0 {
					t.Fatalf("reconcile attempts %d kept from an earlier attempt", next.ReconcileAttempts)
				}
			}},
		{"sweep/completed past ttl soft drops the response", def, completed, sweepAt(at(ttl)), DecisionExpired, WriteUpdate,
			all(status(StatusExpired), stores(Response{}), expiresAt(at(ttl+def.TombstoneRetention)))},
		{"sweep/completed past ttl hard", hard, completed, sweepAt(at(ttl)), DecisionExpired, WriteDelete, status(StatusAbsent)},
		{"sweep/failed_retryable past ttl", def, failed, sweepAt(at(ttl)), DecisionExpired, WriteUpdate, status(StatusExpired)},
		{"sweep/completed within ttl", def, completed, sweepAt(at(ttl - time.Second)), DecisionNothingDue, WriteNone, same},
		{"sweep/unknown never expires", def, unknown, sweepAt(at(10 * ttl)), DecisionNothingDue, WriteNone, same},
		{"sweep/tombstone within retention stays", def, tombstone, sweepAt(at(ttl + def.TombstoneRetention - time.Second)), DecisionNothingDue, WriteNone, same},
		{"sweep/tombstone past retention is pruned", def, tombstone, sweepAt(at(ttl + def.TombstoneRetention)), DecisionPruned, WriteDelete, status(StatusAbsent)},
		{"sweep/absent", def, absent, sweepAt(at(ttl)), DecisionNothingDue, WriteNone, same},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := mustStep(t, c.cur, c.ev, c.policy)
			if r.Decision.Kind != c.want {
				t.Fatalf("decision %s, want %v", r.Decision.Describe(), c.want)
			}
			if r.Write.Kind != c.write {
				t.Fatalf("write %s, want %v", r.Write.Describe(), c.write)
			}
			switch r.Write.Kind {
			case WriteUpdate, WriteDelete:
				if r.Write.ExpectVersion != c.cur.Version || r.Write.ExpectToken != c.cur.Token {
					t.Fatalf("write precondition %s, record is v=%d token=%d", r.Write.Describe(), c.cur.Version, c.cur.Token)
				}
			}
			if r.Next.Scope != c.cur.Scope {
				t.Fatalf("scope changed to %v", r.Next.Scope)
			}
			c.check(t, c.cur, r.Next, r.Decision)
		})
	}
}
