package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// The due case: Store.Due over one lifecycle, on a clock the test moves.
// Records of every kind due at once: contract_due_kinds.go.

// due runs records through Due: listed only once due, most overdue first,
// at most limit at a time, batch after batch.
func (c *contract) due(t *testing.T) {
	f := c.newDueFixture(t)
	tokens := make([]core.Token, len(f.scopes))
	for i := range f.scopes {
		tokens[i] = f.apply(i, core.Event{Kind: core.EventReserve, Fingerprint: fpA}).Transition.Decision.Token
		f.advance(f.lease / 10)
	}
	f.sweepLeases()
	f.reconcile(tokens)
	f.sweepTTLs()
}

// dueFixture is five scopes of one store on a clock the test moves, with a
// policy whose leases, backoffs and TTLs are a few leases long.
type dueFixture struct {
	t       *testing.T
	ctx     context.Context
	s       store.Store
	advance func(time.Duration)
	lease   time.Duration
	p       core.Policy
	scopes  []core.Scope
}

func (c *contract) newDueFixture(t *testing.T) *dueFixture {
	f := &dueFixture{t: t, ctx: context.Background(), p: core.PolicyDefault(), scopes: make([]core.Scope, 5)}
	f.s, f.advance, f.lease = c.clock(t)
	f.p.LeaseDuration, f.p.TTL = f.lease, 2*f.lease
	f.p.ReconcileBackoffBase, f.p.ReconcileBackoffMax, f.p.ReconcileAttemptsMax = f.lease, 4*f.lease, 2
	for i := range f.scopes {
		f.scopes[i] = c.scope(t, i)
	}
	return f
}

func (f *dueFixture) apply(i int, ev core.Event) store.Applied {
	f.t.Helper()
	a, err := applyOver(f.ctx, f.s, &f.p, f.scopes[i], ev)
	if err != nil {
		f.t.Fatalf("%v of scope %d: %v", ev.Kind, i, err)
	}
	return a
}

// due is what Due lists, as indices of the fixture's scopes.
func (f *dueFixture) due(kind store.DueKind, limit int) []int {
	f.t.Helper()
	recs, err := f.s.Due(f.ctx, kind, limit)
	if err != nil {
		f.t.Fatalf("Due(%v, %d): %v", kind, limit, err)
	}
	if len(recs) > limit {
		f.t.Fatalf("Due(%v, %d) listed %d records", kind, limit, len(recs))
	}
	var idx []int
	for _, r := range recs {
		i := slices.Index(f.scopes, r.Scope)
		if i < 0 {
			f.t.Fatalf("Due(%v) listed a record of a scope the test never wrote: %s", kind, r.Describe())
		}
		idx = append(idx, i)
	}
	return idx
}

// sweepLeases: no lease is listed while it runs; once they end, the five
// are listed in batches of 3 then 2, earliest lease end first, and swept
// into unknown.
func (f *dueFixture) sweepLeases() {
	t := f.t
	if got := f.due(store.DueSweep, 10); len(got) != 0 {
		t.Fatalf("leases running, yet Due(sweep) lists scopes %v", got)
	}
	f.advance(f.lease + f.lease/5)
	if got := f.due(store.DueSweep, 0); len(got) != 0 { // five are due now: a limit of 0 is none, not all
		t.Fatalf("Due(sweep, 0) lists scopes %v", got)
	}
	if got := f.due(store.DueSweep, 3); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("first batch of expired leases: scopes %v, want [0 1 2]", got)
	}
	for i := range 3 {
		if d := f.apply(i, core.Event{Kind: core.EventSweep}).Transition.Decision.Kind; d != core.DecisionLeaseExpired {
			t.Fatalf("sweep of scope %d: %v", i, d)
		}
	}
	if got := f.due(store.DueSweep, 3); !slices.Equal(got, []int{3, 4}) {
		t.Fatalf("second batch: scopes %v, want [3 4]", got)
	}
	for i := 3; i < 5; i++ {
		f.apply(i, core.Event{Kind: core.EventSweep})
	}
	if got := f.due(store.DueSweep, 10); len(got) != 0 {
		t.Fatalf("after the sweep, Due(sweep) lists scopes %v (unknown records are never swept)", got)
	}
}

// reconcile: the five unknown records are listed for reconciliation; one
// backs off, two settle, one is abandoned, and the one left and the one
// backed off come back most overdue first.
func (f *dueFixture) reconcile(tokens []core.Token) {
	t := f.t
	got := f.due(store.DueReconcile, 10)
	if sorted := slices.Sorted(slices.Values(got)); !slices.Equal(sorted, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("Due(reconcile) lists scopes %v, want all five", got)
	}
	if got := f.due(store.DueReconcile, 2); len(got) != 2 {
		t.Fatalf("Due(reconcile, 2) lists %d", len(got))
	}
	still := core.Event{Kind: core.EventResolve, Verdict: core.VerdictStillUnknown}
	ev := func(e core.Event, i int) core.Event { e.Token = tokens[i]; return e }
	f.apply(0, ev(still, 0)) // rescheduled after the backoff
	f.apply(1, ev(core.Event{Kind: core.EventResolve, Verdict: core.VerdictExecuted, Response: responses[0]}, 1))
	f.advance(f.lease / 10) // so that 1 expires strictly before 2
	f.apply(2, ev(core.Event{Kind: core.EventResolve, Verdict: core.VerdictNotExecuted}, 2))
	f.apply(4, ev(still, 4))
	if d := f.apply(4, ev(still, 4)).Transition.Decision.Kind; d != core.DecisionAbandoned {
		t.Fatalf("second still-unknown of scope 4: %v, want abandoned", d)
	}
	if got := f.due(store.DueReconcile, 10); !slices.Equal(got, []int{3}) {
		t.Fatalf("Due(reconcile) lists scopes %v, want [3] (0 backs off, 1 and 2 settled, 4 abandoned)", got)
	}
	f.advance(f.lease + f.lease/10)
	if got := f.due(store.DueReconcile, 10); !slices.Equal(got, []int{3, 0}) {
		t.Fatalf("after the backoff, Due(reconcile) lists scopes %v, want [3 0] (most overdue first)", got)
	}
}

// sweepTTLs: the two settled records are listed for sweeping only past
// their TTL, and no longer once soft-expired.
func (f *dueFixture) sweepTTLs() {
	t := f.t
	if got := f.due(store.DueSweep, 10); len(got) != 0 {
		t.Fatalf("settled records listed for sweeping before their TTL: scopes %v", got)
	}
	f.advance(2 * f.lease)
	if got := f.due(store.DueSweep, 10); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("past the TTL, Due(sweep) lists scopes %v, want [1 2]", got)
	}
	for _, i := range []int{1, 2} {
		if d := f.apply(i, core.Event{Kind: core.EventSweep}).Transition.Decision.Kind; d != core.DecisionExpired {
			t.Fatalf("sweep of scope %d past its TTL: %v", i, d)
		}
	}
	if got := f.due(store.DueSweep, 10); len(got) != 0 {
		t.Fatalf("soft-expired records still listed: scopes %v", got)
	}
}
