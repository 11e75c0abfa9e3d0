package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// applier checks that an Applier's Apply answers as the load-step-write
// loop does, step by step, on two scopes of one store.
func (c *contract) applier(t *testing.T) {
	s, advance, lease := c.clock(t)
	if _, ok := s.(store.Applier); !ok {
		t.Log("not a store.Applier: nothing to compare")
		return
	}
	p := core.PolicyDefault()
	p.LeaseDuration = lease
	paths := []applierPath{{"apply", s, c.scope(t, 0), 0, nil}, {"compare-and-set", store.HideApplier(s), c.scope(t, 1), 0, nil}}
	if _, ok := s.(store.HeldApplier); ok {
		// Every event through ApplyHeld, holding what the path's previous
		// event left: it must answer as Apply does.
		paths = append(paths, applierPath{"held", s, c.scope(t, 2), 0, &core.Record{Scope: c.scope(t, 2)}})
	}
	for i, st := range applierScript(lease) {
		got := make([]store.Applied, len(paths))
		for j := range paths {
			got[j] = c.stepThrough(t, &p, i, st, &paths[j])
		}
		x, y := got[0], got[1]
		if len(got) > 2 && got[2].Transition.Decision.Kind != y.Transition.Decision.Kind {
			t.Fatalf("step %d (%v): ApplyHeld and load-step-write disagree: %s, %s", i, st.ev.Kind, got[2].Transition.Describe(), y.Transition.Describe())
		}
		if x.Before != y.Before || x.Transition.Write.Kind != y.Transition.Write.Kind || x.Record.Status != y.Record.Status ||
			x.Record.Version != y.Record.Version || x.Record.LastErrorCode != y.Record.LastErrorCode ||
			x.Record.ReconcileAttempts != y.Record.ReconcileAttempts || !x.Record.Response.Equal(y.Record.Response) {
			t.Fatalf("step %d (%v): Apply and load-step-write disagree:\n apply %s, %s\n cas   %s, %s", i, st.ev.Kind,
				x.Transition.Describe(), x.Record.Describe(), y.Transition.Describe(), y.Record.Describe())
		}
		if st.wait > 0 {
			advance(st.wait)
		}
	}
	// Bad input: the core refuses, nothing is written.
	for _, pa := range paths {
		before := load(t, pa.store, pa.scope).Record
		_, err := applyOver(context.Background(), pa.store, &p, pa.scope, core.Event{Kind: core.EventComplete, Token: pa.token, Response: core.Response{StatusCode: 99}})
		if !errors.Is(err, core.ErrResponseInvalid) {
			t.Fatalf("invalid response through %s: %v, want core.ErrResponseInvalid", pa.name, err)
		}
		if after := load(t, pa.store, pa.scope).Record; !c.d.SameRecord(&before, &after) {
			t.Fatalf("a refused event changed the record through %s:\n was %s\n now %s", pa.name, before.Describe(), after.Describe())
		}
	}
}

// applierPath is one way through a store, on a scope of its own: its Apply,
// or load-step-write with the Apply hidden.
type applierPath struct {
	name  string
	store store.Store
	scope core.Scope
	token core.Token   // of the attempt last told to execute
	held  *core.Record // through store.ApplyHeld, holding the record the path's last event left
}

// applierStep is one event of the applier script and the decision it must get.
type applierStep struct {
	ev   core.Event
	want core.DecisionKind
	wait time.Duration // advance the clock after the step
}

// applierScript takes a scope through every status and most decisions.
func applierScript(lease time.Duration) []applierStep {
	return []applierStep{
		{core.Event{Kind: core.EventReserve, Fingerprint: fpA}, core.DecisionExecute, 0},
		{core.Event{Kind: core.EventReserve, Fingerprint: fpA}, core.DecisionInFlight, 0},
		{core.Event{Kind: core.EventReserve, Fingerprint: fpB}, core.DecisionMismatch, 0},
		{core.Event{Kind: core.EventHeartbeat}, core.DecisionExtended, 0},
		{core.Event{Kind: core.EventMarkUnknown}, core.DecisionMarkedUnknown, 0},
		{core.Event{Kind: core.EventReserve, Fingerprint: fpA}, core.DecisionReconciling, 0},
		{core.Event{Kind: core.EventResolve, Verdict: core.VerdictStillUnknown}, core.DecisionRescheduled, 0},
		{core.Event{Kind: core.EventResolve, Verdict: core.VerdictNotExecuted}, core.DecisionResolved, 0},
		{core.Event{Kind: core.EventReserve, Fingerprint: fpA}, core.DecisionExecute, lease + lease/10},
		{core.Event{Kind: core.EventReserve, Fingerprint: fpA}, core.DecisionReconciling, 0},
		{core.Event{Kind: core.EventComplete, Response: responses[1]}, core.DecisionCompleted, 0},
		{core.Event{Kind: core.EventComplete, Response: responses[1]}, core.DecisionAcknowledged, 0},
		{core.Event{Kind: core.EventComplete, Response: responses[0]}, core.DecisionConflict, 0},
		{core.Event{Kind: core.EventReserve, Fingerprint: fpA}, core.DecisionReplay, 0},
		{core.Event{Kind: core.EventFail}, core.DecisionConflict, 0},
	}
}

// stepThrough applies step i through pa and checks its decision, and that
// the Applied's record is what the store then holds.
func (c *contract) stepThrough(t *testing.T, p *core.Policy, i int, st applierStep, pa *applierPath) store.Applied {
	t.Helper()
	ev := st.ev
	if ev.Kind != core.EventReserve {
		ev.Token = pa.token
	}
	var a store.Applied
	var err error
	if pa.held != nil {
		err = store.ApplyHeld(context.Background(), pa.store, pa.held, ev, p, &a)
		*pa.held = a.Record
	} else {
		a, err = applyOver(context.Background(), pa.store, p, pa.scope, ev)
	}
	if err != nil {
		t.Fatalf("step %d (%v) through %s: %v", i, ev.Kind, pa.name, err)
	}
	if a.Transition.Decision.Kind != st.want {
		t.Fatalf("step %d (%v) through %s: %v, want %v", i, ev.Kind, pa.name, a.Transition.Decision.Kind, st.want)
	}
	if a.Transition.Decision.Kind == core.DecisionExecute {
		pa.token = a.Transition.Decision.Token
	}
	stored := load(t, pa.store, pa.scope).Record
	if !c.d.SameRecord(&stored, &a.Record) {
		t.Fatalf("step %d (%v) through %s: Applied.Record is not what the store holds:\n applied %s\n stored  %s", i, ev.Kind, pa.name, a.Record.Describe(), stored.Describe())
	}
	return a
}

// applyOrHeld returns a function that applies an event to s through
// store.ApplyHeld when given a held record, else through store.Apply, and
// fails the test on an error.
func applyOrHeld(t *testing.T, s store.Store, p *core.Policy) func(sc core.Scope, held *core.Record, ev core.Event) store.Applied {
	return func(sc core.Scope, held *core.Record, ev core.Event) store.Applied {
		t.Helper()
		ctx := context.Background()
		var a store.Applied
		var err error
		if held != nil {
			err = store.ApplyHeld(ctx, s, held, ev, p, &a)
		} else {
			err = store.Apply(ctx, s, sc, ev, p, &a)
		}
		if err != nil {
			t.Fatalf("%v: %v", ev.Kind, err)
		}
		return a
	}
}

// heldApplier checks ApplyHeld where it may not save the load: a held
// record that a heartbeat has since moved on (the event must still apply),
// and one of an attempt that lost its token (the completion is stale and
// writes nothing).
func (c *contract) heldApplier(t *testing.T) {
	s := c.newStore(t)
	if _, ok := s.(store.HeldApplier); !ok {
		t.Log("not a store.HeldApplier: store.ApplyHeld is store.Apply")
	}
	p := core.PolicyDefault()
	apply := applyOrHeld(t, s, &p)
	// Moved on by a heartbeat: the held version is stale, the token still owns.
	sc := c.scope(t, 0)
	r := apply(sc, nil, core.Event{Kind: core.EventReserve, Fingerprint: fpA})
	held := r.Record
	apply(sc, nil, core.Event{Kind: core.EventHeartbeat, Token: held.Token})
	a := apply(sc, &held, core.Event{Kind: core.EventComplete, Token: held.Token, Response: responses[0]})
	if a.Transition.Decision.Kind != core.DecisionCompleted {
		t.Fatalf("complete over a held record a heartbeat moved on: %s, want completed", a.Transition.Describe())
	}
	if stored := load(t, s, sc).Record; !c.d.SameRecord(&stored, &a.Record) || !stored.Response.Equal(responses[0]) {
		t.Fatalf("after ApplyHeld: stored %s, applied %s", stored.Describe(), a.Record.Describe())
	}
	// Fenced off: the attempt became unknown, the reconciler freed the key,
	// a new attempt holds it. The old attempt's completion is stale.
	sc = c.scope(t, 1)
	r = apply(sc, nil, core.Event{Kind: core.EventReserve, Fingerprint: fpA})
	old := r.Record
	apply(sc, nil, core.Event{Kind: core.EventMarkUnknown, Token: old.Token})
	apply(sc, nil, core.Event{Kind: core.EventResolve, Token: old.Token, Verdict: core.VerdictNotExecuted})
	apply(sc, nil, core.Event{Kind: core.EventReserve, Fingerprint: fpA})
	before := load(t, s, sc).Record
	a = apply(sc, &old, core.Event{Kind: core.EventComplete, Token: old.Token, Response: responses[0]})
	if a.Transition.Decision.Kind != core.DecisionStale {
		t.Fatalf("completion of a fenced-off attempt: %s, want stale", a.Transition.Describe())
	}
	if after := load(t, s, sc).Record; !c.d.SameRecord(&before, &after) {
		t.Fatalf("a stale held completion changed the record:\n was %s\n now %s", before.Describe(), after.Describe())
	}
}
