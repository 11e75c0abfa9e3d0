package storetest

import (
	"context"
	"testing"

	"github.com/idemkit/idem/core"
)

// The copy cases: the store keeps its own copy of the bytes it is given, so
// that a caller reusing its buffers once a call returned changes nothing
// that is replayed.

func (c *contract) recordsAreCopies(t *testing.T) {
	s := c.newStore(t)
	ctx := context.Background()
	sc := c.scope(t, 0)
	snap := load(t, s, sc)
	rec := sample(sc, snap.Now, snap.FreshToken, 1)
	want := rec
	want.Response = rec.Response.Clone()
	wantOK(t, "insert", s.Insert(ctx, &rec))
	rec.Response.Body[0] = 'X' // the caller reuses its buffers
	rec.Response.Headers[0].Value = "changed"
	c.same(t, s, want)
	next := want
	next.Version = 2
	next.Response = want.Response.Clone()
	wantOK(t, "compare-and-set", s.CompareAndSet(ctx, &next, 1, want.Token))
	want2 := next
	want2.Response = next.Response.Clone()
	next.Response.Body[1] = 'Y'
	c.same(t, s, want2)
}

// appliedResponsesAreCopies checks that a response stored through Apply
// (Complete, and Resolve as executed), or through ApplyHeld, is the store's
// own copy: a caller that reuses its buffers once the call returned (a
// handler with a pooled body) must not change what is replayed. A store
// without Apply goes through load-step-write, which recordsAreCopies covers
// too.
func (c *contract) appliedResponsesAreCopies(t *testing.T) {
	s := c.newStore(t)
	p := core.PolicyDefault()
	apply := applyOrHeld(t, s, &p)
	for i, how := range []string{"apply complete", "apply-held complete", "apply resolve executed"} {
		sc := c.scope(t, i)
		r := apply(sc, nil, core.Event{Kind: core.EventReserve, Fingerprint: fpA})
		tok := r.Transition.Decision.Token
		mine := responses[0].Clone() // the caller's buffers
		want := mine.Clone()
		ev := core.Event{Kind: core.EventComplete, Token: tok, Response: mine}
		var held *core.Record
		switch i {
		case 1:
			held = &r.Record
		case 2:
			apply(sc, nil, core.Event{Kind: core.EventMarkUnknown, Token: tok})
			ev = core.Event{Kind: core.EventResolve, Token: tok, Verdict: core.VerdictExecuted, Response: mine}
		}
		a := apply(sc, held, ev)
		if a.Record.Status != core.StatusCompleted {
			t.Fatalf("%s: %s, want completed", how, a.Transition.Describe())
		}
		for j := range mine.Body {
			mine.Body[j] ^= 0xff
		}
		mine.Headers[0].Name, mine.Headers[0].Value = "X-Reused", "changed"
		if got := load(t, s, sc).Record.Response; !got.Equal(want) {
			t.Fatalf("%s: the caller's buffers, reused after the call, changed the stored response:\n got  %s\n want %s", how, got.Describe(), want.Describe())
		}
	}
}
