package core_test

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/refmodel"
)

// stepFunc is a core under test: core.Step, or one with a bug planted, on
// copies of its arguments, returning the record it left.
type stepFunc func(rec core.Record, ev core.Event, p core.Policy) (core.Transition, core.Record, error)

func step(rec core.Record, ev core.Event, p core.Policy) (core.Transition, core.Record, error) {
	tr, err := core.Step(&rec, &ev, &p)
	return tr, rec, err
}

// TestCoreAgreesWithReferenceModel steps the core and the reference model
// (internal/refmodel, the second reading of SPEC §5) side by side over
// random worlds and compares, for every event, the refusal, the decision
// (kind, token and retry hint), the write and every field of the record
// left. It runs over rapid's worlds (a failure shrinks) and over the same
// 500 seeded worlds on every run, so that every run reaches states a
// hundred random worlds may miss, such as a second unknown spell of one
// incarnation.
func TestCoreAgreesWithReferenceModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { compareWithModel(core.RapidSource(t), step) })
	if failed := core.FirstFailure(2, func(src core.Source) { compareWithModel(src, step) }); failed != "" {
		t.Fatal(failed)
	}
}

// compareWithModel drives step and the model over one random world.
func compareWithModel(src core.Source, step stepFunc) {
	w := core.NewWorld(src)
	p := w.Policy()
	p.ReconcileBackoffMax = time.Duration(core.IntRange(src, "cap_s", 1, 60)) * time.Second
	for range core.IntRange(src, "steps", 1, 200) {
		cur, ev := w.Next(src)
		disturb(src, cur, &ev, p)
		tr, next, err := step(*cur, ev, *p)
		var want refmodel.Outcome
		refmodel.Step(&want, cur, &ev, p)
		if why := disagreement(tr, &next, err, &want); why != "" {
			src.Fatalf("%v (token %d) at %s on %s: %s", ev.Kind, ev.Token, ev.Now.Format(time.RFC3339Nano), cur.Describe(), why)
		}
		*cur = next
	}
}

// disturb makes some events what a store's clock and a faulty host send:
// a time at exactly one of the record's deadlines (a coarse clock lands on
// them), a time from a clock that stepped back (up to a lease), and a
// reserve whose "fresh" token is the record's own (a driver bug the core
// must refuse).
func disturb(src core.Source, cur *core.Record, ev *core.Event, p *core.Policy) {
	switch core.IntRange(src, "clock", 0, 9) {
	case 0:
		ev.Now = ev.Now.Add(-p.LeaseDuration * time.Duration(core.IntRange(src, "back_halves", 1, 2)) / 2)
	case 1, 2:
		deadlines := [...]time.Time{cur.LockedUntil, cur.ExpiresAt, cur.ReconcileAfter}
		if at := deadlines[core.IntRange(src, "deadline", 0, len(deadlines)-1)]; !at.IsZero() {
			ev.Now = at
		}
	}
	if ev.Kind == core.EventReserve && cur.Exists() && core.IntRange(src, "stale_fresh", 0, 19) == 0 {
		ev.Token = cur.Token
	}
}

// disagreement is how the core's answer differs from the model's, "" when
// it does not.
func disagreement(tr core.Transition, next *core.Record, err error, want *refmodel.Outcome) string {
	switch {
	case (err != nil) != (want.Refusal != ""):
		return "core error " + errString(err) + ", model refusal " + want.Refusal
	case err != nil:
		return ""
	case tr.Decision != want.Decision:
		return "core decides " + tr.Decision.Describe() + ", model " + want.Decision.Describe()
	case tr.Write != want.Write:
		return "core writes " + tr.Write.Describe() + ", model " + want.Write.Describe()
	}
	if f := refmodel.Diff(&want.Record, next); f != "" {
		return f + " differs:\n core  " + next.Describe() + "\n model " + want.Record.Describe()
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}

// TestModelComparisonCatchesMutants: cores that bend one rule of the table
// slightly, in ways the invariants alone do not forbid, are told apart from
// the model.
func TestModelComparisonCatchesMutants(t *testing.T) {
	mutants := map[string]stepFunc{
		"heartbeat does not extend": func(c core.Record, e core.Event, p core.Policy) (core.Transition, core.Record, error) {
			tr, next, err := step(c, e, p)
			if e.Kind == core.EventHeartbeat && tr.Decision.Kind == core.DecisionExtended {
				next.LockedUntil = c.LockedUntil
			}
			return tr, next, err
		},
		"backoff does not grow": func(c core.Record, e core.Event, p core.Policy) (core.Transition, core.Record, error) {
			c.ReconcileAttempts = 0
			return step(c, e, p)
		},
		"ttl from creation": func(c core.Record, e core.Event, p core.Policy) (core.Transition, core.Record, error) {
			tr, next, err := step(c, e, p)
			if tr.Decision.Kind == core.DecisionCompleted {
				next.ExpiresAt = next.CreatedAt.Add(p.TTL)
			}
			return tr, next, err
		},
		"abandons one look early": func(c core.Record, e core.Event, p core.Policy) (core.Transition, core.Record, error) {
			if p.ReconcileAttemptsMax > 1 {
				p.ReconcileAttemptsMax--
			}
			return step(c, e, p)
		},
		// Caught only since the decision is compared whole, not by its kind.
		"retry hint ignores the reconciler's schedule": func(c core.Record, e core.Event, p core.Policy) (core.Transition, core.Record, error) {
			tr, next, err := step(c, e, p)
			if tr.Decision.Kind == core.DecisionReconciling {
				tr.Decision.RetryAfter = p.RetryAfter
			}
			return tr, next, err
		},
		// Caught only on the events whose clock stepped back (disturb).
		"heartbeat shortens a lease": func(c core.Record, e core.Event, p core.Policy) (core.Transition, core.Record, error) {
			tr, next, err := step(c, e, p)
			if tr.Decision.Kind == core.DecisionExtended {
				next.LockedUntil = e.Now.Add(p.LeaseDuration)
			}
			return tr, next, err
		},
	}
	for name, m := range mutants {
		caught := core.FirstFailure(1, func(src core.Source) { compareWithModel(src, m) })
		if caught == "" {
			t.Errorf("mutant %q agreed with the model in 500 worlds", name)
		} else {
			t.Logf("%s: %.160s", name, caught)
		}
	}
}
