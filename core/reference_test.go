package core

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// refRecord and refStep are a second, deliberately simple reading of the
// SPEC §5 table, written without looking at step.go: one flat function, no
// shared helpers, only the fields the table talks about. The property test
// below holds the core to it.
type refRecord struct {
	exists                 bool
	status                 string
	fp                     Fingerprint
	token                  Token
	body                   string
	lockedUntil, expiresAt time.Time
	reconcileAfter         time.Time
	attempts               uint32
	lastError              string
}

func refStep(r refRecord, ev Event, p Policy) (string, refRecord) {
	now := ev.Now
	owner := r.exists && r.token == ev.Token
	switch ev.Kind {
	case EventReserve:
		dead := !r.exists || r.status == "expired" ||
			((r.status == "completed" || r.status == "failed_retryable") && !now.Before(r.expiresAt))
		if dead {
			return "execute", refRecord{exists: true, status: "in_progress", fp: ev.Fingerprint, token: ev.Token,
				lockedUntil: now.Add(p.LeaseDuration), expiresAt: now.Add(p.TTL)}
		}
		if r.fp != ev.Fingerprint {
			return "mismatch", r
		}
		switch r.status {
		case "in_progress":
			if now.Before(r.lockedUntil) {
				return "in_flight", r
			}
			r.status, r.lastError, r.reconcileAfter, r.attempts = "unknown", "lease_expired", now, 0
			return "reconciling", r
		case "completed":
			return "replay", r
		case "failed_retryable":
			r.status, r.token, r.lockedUntil, r.lastError, r.expiresAt = "in_progress", ev.Token, now.Add(p.LeaseDuration), "", now.Add(p.TTL)
			return "execute", r
		}
		return "reconciling", r // unknown
	case EventComplete:
		if !owner {
			return "stale", r
		}
		if r.status == "in_progress" || r.status == "unknown" {
			r.status, r.body, r.lastError, r.lockedUntil, r.reconcileAfter, r.expiresAt = "completed", string(ev.Response.Body), "", time.Time{}, time.Time{}, now.Add(p.TTL)
			return "completed", r
		}
		if r.status == "completed" && r.body == string(ev.Response.Body) {
			return "acknowledged", r
		}
		return "conflict", r
	case EventFail:
		if !owner {
			return "stale", r
		}
		if r.status == "failed_retryable" {
			return "acknowledged", r
		}
		if r.status != "in_progress" && r.status != "unknown" {
			return "conflict", r
		}
		if p.Fail == FailEvict {
			return "failed", refRecord{}
		}
		r.status, r.lastError, r.lockedUntil, r.reconcileAfter, r.expiresAt = "failed_retryable", ev.ErrorCode, time.Time{}, time.Time{}, now.Add(p.TTL)
		if r.lastError == "" {
			r.lastError = "not_executed"
		}
		return "failed", r
	case EventMarkUnknown:
		if !owner {
			return "stale", r
		}
		if r.status == "unknown" {
			return "acknowledged", r
		}
		if r.status != "in_progress" {
			return "conflict", r
		}
		r.status, r.lastError, r.reconcileAfter, r.attempts = "unknown", ev.ErrorCode, now, 0
		if r.lastError == "" {
			r.lastError = "outcome_unknown"
		}
		return "marked_unknown", r
	case EventHeartbeat:
		if !owner {
			return "stale", r
		}
		if r.status != "in_progress" {
			return "conflict", r
		}
		if now.Add(p.LeaseDuration).After(r.lockedUntil) {
			r.lockedUntil = now.Add(p.LeaseDuration)
		}
		return "extended", r
	case EventResolve:
		if !r.exists || r.status != "unknown" {
			return "not_applicable", r
		}
		if !owner {
			return "stale", r
		}
		switch ev.Verdict {
		case VerdictExecuted:
			r.status, r.body, r.lastError, r.lockedUntil, r.reconcileAfter, r.expiresAt = "completed", string(ev.Response.Body), "", time.Time{}, time.Time{}, now.Add(p.TTL)
			return "resolved", r
		case VerdictNotExecuted:
			r.status, r.lastError, r.lockedUntil, r.reconcileAfter, r.expiresAt = "failed_retryable", "reconciled_not_executed", time.Time{}, time.Time{}, now.Add(p.TTL)
			return "resolved", r
		}
		backoff := p.ReconcileBackoffBase
		for i := uint32(0); i < r.attempts; i++ {
			backoff *= 2
			if backoff >= p.ReconcileBackoffCap {
				backoff = p.ReconcileBackoffCap
				break
			}
		}
		r.attempts++
		if ev.ErrorCode != "" {
			r.lastError = ev.ErrorCode
		}
		if r.attempts >= p.ReconcileAttemptsMax {
			r.reconcileAfter = time.Time{}
			return "abandoned", r
		}
		r.reconcileAfter = now.Add(backoff)
		return "rescheduled", r
	case EventSweep:
		if r.status == "in_progress" && !now.Before(r.lockedUntil) {
			r.status, r.lastError, r.reconcileAfter, r.attempts = "unknown", "lease_expired", now, 0
			return "lease_expired", r
		}
		if (r.status == "completed" || r.status == "failed_retryable") && !now.Before(r.expiresAt) {
			if p.Expiry == ExpiryHard {
				return "expired", refRecord{}
			}
			r.status, r.body, r.lastError, r.expiresAt = "expired", "", "", now.Add(p.TombstoneRetention)
			return "expired", r
		}
		if r.status == "expired" && !now.Before(r.expiresAt) {
			return "pruned", refRecord{}
		}
		return "nothing_due", r
	}
	panic("unreachable: the test only draws valid kinds")
}

func toRef(r Record) refRecord {
	if !r.Exists() {
		return refRecord{}
	}
	return refRecord{exists: true, status: r.Status.String(), fp: r.Fingerprint, token: r.Token, body: string(r.Response.Body),
		lockedUntil: r.LockedUntil, expiresAt: r.ExpiresAt, reconcileAfter: r.ReconcileAfter, attempts: r.ReconcileAttempts, lastError: r.LastErrorCode}
}

// TestCoreAgreesWithReferenceModel steps the core and the reference model
// side by side over random event sequences and compares every decision and
// every field the table defines.
func TestCoreAgreesWithReferenceModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { compareWithModel(rapidSource{t}, step) })
}

// compareWithModel drives step and the reference model over one random world.
func compareWithModel(src source, step stepFunc) {
	w := newWorld(src)
	w.policy.ReconcileBackoffCap = time.Duration(src.intRange("cap_s", 1, 60)) * time.Second
	steps := src.intRange("steps", 1, 200)
	for range steps {
		s := &w.scopes[src.intRange("scope", 0, len(w.scopes)-1)]
		ev := w.drawEvent(src, s)
		r, err := step(s.cur, ev, w.policy)
		if err != nil {
			src.Fatalf("core refused valid %v: %v", ev.Kind, err)
		}
		// The world's responses differ in their bodies, so the model
		// keeps bodies only.
		wantDecision, want := refStep(toRef(s.cur), ev, w.policy)
		if got := r.Decision.Kind.String(); got != wantDecision {
			src.Fatalf("%v on %s: core says %s, model says %s", ev.Kind, s.cur.Describe(), got, wantDecision)
		}
		if got := toRef(r.Next); got != want {
			src.Fatalf("%v on %s:\n core  %+v\n model %+v", ev.Kind, s.cur.Describe(), got, want)
		}
		s.cur = r.Next
	}
}

// TestModelComparisonCatchesMutants: cores that bend one rule of the table
// slightly, in ways the invariants alone do not forbid, are told apart from
// the model.
func TestModelComparisonCatchesMutants(t *testing.T) {
	mutants := map[string]stepFunc{
		"heartbeat does not extend": func(c Record, e Event, p Policy) (stepped, error) {
			r, err := step(c, e, p)
			if e.Kind == EventHeartbeat && r.Decision.Kind == DecisionExtended {
				r.Next.LockedUntil = c.LockedUntil
			}
			return r, err
		},
		"backoff does not grow": func(c Record, e Event, p Policy) (stepped, error) {
			c.ReconcileAttempts = 0
			return step(c, e, p)
		},
		"ttl from creation": func(c Record, e Event, p Policy) (stepped, error) {
			r, err := step(c, e, p)
			if r.Decision.Kind == DecisionCompleted {
				r.Next.ExpiresAt = r.Next.CreatedAt.Add(p.TTL)
			}
			return r, err
		},
		"abandons one look early": func(c Record, e Event, p Policy) (stepped, error) {
			if p.ReconcileAttemptsMax > 1 {
				p.ReconcileAttemptsMax--
			}
			return step(c, e, p)
		},
	}
	for name, m := range mutants {
		caught := firstFailure(1, func(src source) { compareWithModel(src, m) })
		if caught == "" {
			t.Errorf("mutant %q agreed with the model in 500 worlds", name)
		} else {
			t.Logf("%s: %.100s", name, caught)
		}
	}
}
