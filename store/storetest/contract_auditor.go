package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	"github.com/idemkit/idem/store"
)

// runAuditor checks store.Auditor, for a store that has it: a settlement
// by hand is applied through the core and its audit kept exactly when the
// event wrote, with the write's time, version and decision; a stale token,
// a record in progress and an audit without who or why write nothing and
// keep nothing; the trail outlives the record (an audited evict).
func runAuditor(t *testing.T, newStore func(*testing.T) store.Store, cfg *config) {
	c := &contract{cfg: cfg, newStore: newStore, d: linearizability.ModelOptions{TimeResolution: cfg.resolution}}
	s := newStore(t)
	au, ok := s.(store.Auditor)
	if !ok {
		t.Logf("%T is no store.Auditor: nothing to check", s)
		return
	}
	ctx, p := context.Background(), core.PolicyDefault()
	apply := func(sc core.Scope, ev core.Event) store.Applied {
		t.Helper()
		var a store.Applied
		if err := store.Apply(ctx, s, sc, ev, &p, &a); err != nil {
			t.Fatalf("%v on %s: %v", ev.Kind, sc, err)
		}
		return a
	}
	unknown, running := c.scope(t, 0), c.scope(t, 1)
	tok := apply(unknown, core.Event{Kind: core.EventReserve, Fingerprint: fpA}).Record.Token
	apply(unknown, core.Event{Kind: core.EventMarkUnknown, Token: tok})
	live := apply(running, core.Event{Kind: core.EventReserve, Fingerprint: fpA}).Record
	resolve := func(sc core.Scope, tok core.Token, who, why string) (store.Applied, error) {
		a := store.Audit{Scope: sc, Who: who, Why: why, Event: core.EventResolve, Verdict: core.VerdictNotExecuted, Token: tok}
		var out store.Applied
		err := au.ApplyAudited(ctx, core.Event{Kind: core.EventResolve, Verdict: core.VerdictNotExecuted, Token: tok}, &p, &a, &out)
		return out, err
	}
	for _, bad := range [][2]string{{"", "ticket 1"}, {"alice", ""}, {"alice\nforged line", "x"}, {"alice", "\x1b[31m"}} {
		if _, err := resolve(unknown, tok, bad[0], bad[1]); !errors.Is(err, store.ErrInvalidAudit) {
			t.Errorf("who %q why %q: %v, want store.ErrInvalidAudit", bad[0], bad[1], err)
		}
	}
	if out, err := resolve(unknown, tok+1, "alice", "a stale finding"); err != nil || out.Transition.Write.Kind != core.WriteNone {
		t.Errorf("a stale token: %v, %+v: want nothing written", err, out.Transition)
	}
	if out, err := resolve(running, live.Token, "alice", "re-open a live lease"); err != nil || out.Transition.Decision.Kind != core.DecisionNotApplicable {
		t.Errorf("a record in progress: %v, %+v: want not applicable", err, out.Transition)
	}
	c.same(t, s, live)
	out, err := resolve(unknown, tok, "alice", "the PSP has no charge: OPS-1234")
	if err != nil || out.Record.Status != core.StatusFailedRetryable || out.Transition.Decision.Kind != core.DecisionResolved {
		t.Fatalf("resolve: %v, %+v", err, out)
	}
	want := store.Audit{Scope: unknown, Who: "alice", Why: "the PSP has no charge: OPS-1234", Event: core.EventResolve,
		Verdict: core.VerdictNotExecuted, Token: tok, At: out.Now, Version: out.Record.Version, Decision: core.DecisionResolved}
	checkTrail(t, au, unknown, want)
	checkTrail(t, au, running)
	ev := store.Audit{Scope: unknown, Who: "carol", Why: "erasure request", Event: core.EventEvict, Token: tok}
	var gone store.Applied
	if err := au.ApplyAudited(ctx, core.Event{Kind: core.EventEvict, Token: tok}, &p, &ev, &gone); err != nil || gone.Record.Exists() || gone.Transition.Decision.Kind != core.DecisionEvicted {
		t.Fatalf("evict: %v, %+v", err, gone)
	}
	evicted := ev
	evicted.At, evicted.Version, evicted.Decision = gone.Now, 0, core.DecisionEvicted
	checkTrail(t, au, unknown, want, evicted) // the trail outlives the record
	if snap := load(t, s, unknown); snap.Record.Exists() {
		t.Fatal("an evicted record is still stored")
	}
}

// checkTrail fails unless scope's trail is want, field by field.
func checkTrail(t *testing.T, au store.Auditor, scope core.Scope, want ...store.Audit) {
	t.Helper()
	got, err := au.Audits(context.Background(), scope)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d audits, want %d: %+v", scope, len(got), len(want), got)
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.At.Equal(w.At) {
			t.Errorf("%s: audit %d at %v, want %v", scope, i, g.At, w.At)
		}
		g.At = w.At
		if g != w {
			t.Errorf("%s: audit %d\n got %+v\nwant %+v", scope, i, g, w)
		}
	}
}
