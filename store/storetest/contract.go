package storetest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"testing"
	"time"

	"github.com/idemkit/idem/linearizability"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/fakeclock"
	"github.com/idemkit/idem/store"
)

// contract holds what the functional tests share.
type contract struct {
	cfg      *config
	newStore func(*testing.T) store.Store
	d        linearizability.ModelOptions
}

func runContract(t *testing.T, newStore func(*testing.T) store.Store, cfg *config) {
	c := &contract{cfg: cfg, newStore: newStore, d: linearizability.ModelOptions{TimeResolution: cfg.resolution}}
	t.Run("load-absent", c.loadAbsent)
	t.Run("fresh-tokens", c.freshTokens)
	t.Run("insert-load", c.insertLoad)
	t.Run("insert-existing", c.insertExisting)
	t.Run("compare-and-set", c.compareAndSet)
	t.Run("delete", c.delete)
	t.Run("reinsert-after-delete", c.reinsertAfterDelete)
	t.Run("scopes-sharing-a-key", c.scopesSharingAKey)
	t.Run("tokens-across-scopes", c.tokensAcrossScopes)
	t.Run("reserve-tokens", c.reserveTokens)
	t.Run("deletes-keep-the-others", c.deletesKeepTheOthers)
	t.Run("records-are-copies", c.recordsAreCopies)
	t.Run("applied-responses-are-copies", c.appliedResponsesAreCopies)
	t.Run("accepted-bytes", c.acceptedBytes)
	t.Run("due", c.due)
	t.Run("due-across-kinds", c.dueAcrossKinds)
	t.Run("wait", c.wait)
	t.Run("cancelled-context", c.cancelledContext)
	t.Run("applier", c.applier)
	t.Run("held-applier", c.heldApplier)
}

// scope is a scope no other test or run uses.
func (c *contract) scope(t *testing.T, i int) core.Scope {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", c.cfg.seed, t.Name())
	return core.Scope{Tenant: "lin", Principal: "contract", UseCase: "lin.contract",
		Key: fmt.Sprintf("%016x-%04d-contract", h.Sum64(), i)}
}

// clock is the store and a way to move its time: the controlled clock if
// the driver gave one, else the store's own clock and real sleeps, with
// leases to match.
func (c *contract) clock(t *testing.T) (s store.Store, advance func(time.Duration), lease time.Duration) {
	if c.cfg.clockStore != nil {
		clk := fakeclock.New()
		return c.cfg.clockStore(t, clk.Now), clk.Advance, 5 * time.Minute
	}
	return c.newStore(t), time.Sleep, c.cfg.realLease
}

// sample is a record with every field set, as the core could have written it.
func sample(sc core.Scope, now time.Time, token core.Token, version uint64) core.Record {
	return core.Record{
		Scope: sc, Status: core.StatusCompleted, Fingerprint: fpA, Token: token, Version: version,
		Response: core.Response{StatusCode: 201, Headers: []core.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Id", Value: "7"}},
			Body: []byte(`{"paymentId":"p-1"}`), SchemaVersion: 3},
		LastErrorCode: "lease_expired", LockedUntil: now.Add(time.Minute), ReconcileAfter: now.Add(2 * time.Minute),
		ReconcileAttempts: 2, CreatedAt: now, CompletedAt: now.Add(time.Second), ExpiresAt: now.Add(time.Hour),
	}
}

func load(t *testing.T, s store.Store, sc core.Scope) store.Snapshot {
	t.Helper()
	snap, err := s.Load(context.Background(), sc)
	if err != nil {
		t.Fatalf("load %s: %v", sc, err)
	}
	if snap.Record.Scope != sc {
		t.Fatalf("load %s returned a record of scope %s", sc, snap.Record.Scope)
	}
	return snap
}

// same fails unless the stored record is want, field by field.
func (c *contract) same(t *testing.T, s store.Store, want core.Record) {
	t.Helper()
	got := load(t, s, want.Scope).Record
	if !c.d.SameRecord(&got, &want) {
		t.Fatalf("stored record differs:\n got  %s\n want %s", got.Describe(), want.Describe())
	}
}

func wantConflict(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("%s: %v, want store.ErrConflict", what, err)
	}
}

func wantOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func (c *contract) loadAbsent(t *testing.T) {
	s := c.newStore(t)
	sc := c.scope(t, 0)
	snap := load(t, s, sc)
	if snap.Record.Exists() || snap.Record.Version != 0 || snap.Record.Token != 0 || !snap.Record.Fingerprint.IsZero() {
		t.Fatalf("absent scope loaded as %s, want Record{Scope: s}", snap.Record.Describe())
	}
	if snap.Now.IsZero() {
		t.Fatal("Snapshot.Now is zero: the store must return its time")
	}
	if snap.FreshToken == 0 {
		t.Fatal("Snapshot.FreshToken is zero")
	}
}

func (c *contract) freshTokens(t *testing.T) {
	s := c.newStore(t)
	ctx := context.Background()
	sc := c.scope(t, 0)
	var last core.Token
	next := func(when string) core.Token {
		t.Helper()
		snap := load(t, s, sc)
		if snap.FreshToken <= last {
			t.Fatalf("%s: fresh token %d after %d: tokens must grow and never repeat", when, snap.FreshToken, last)
		}
		last = snap.FreshToken
		return last
	}
	for range 10 {
		next("absent")
	}
	tok := next("before insert")
	rec := sample(sc, time.Now(), tok, 1)
	wantOK(t, "insert", s.Insert(ctx, &rec))
	for range 5 {
		if got := next("present"); got <= rec.Token {
			t.Fatalf("fresh token %d not above the record's %d", got, rec.Token)
		}
	}
	wantOK(t, "delete", s.Delete(ctx, sc, rec.Version, rec.Token))
	for range 5 {
		next("after delete (the token history survives)")
	}
}

func (c *contract) insertLoad(t *testing.T) {
	s := c.newStore(t)
	sc := c.scope(t, 0)
	snap := load(t, s, sc)
	rec := sample(sc, snap.Now, snap.FreshToken, 1)
	wantOK(t, "insert", s.Insert(context.Background(), &rec))
	c.same(t, s, rec)
	// The other statuses, and a record with empty optional fields.
	for i, st := range []core.Status{core.StatusInProgress, core.StatusFailedRetryable, core.StatusUnknown, core.StatusExpired} {
		sc := c.scope(t, i+1)
		snap := load(t, s, sc)
		r := core.Record{Scope: sc, Status: st, Fingerprint: fpB, Token: snap.FreshToken, Version: 1, CreatedAt: snap.Now}
		wantOK(t, "insert "+st.String(), s.Insert(context.Background(), &r))
		c.same(t, s, r)
	}
}

func (c *contract) insertExisting(t *testing.T) {
	s := c.newStore(t)
	sc := c.scope(t, 0)
	snap := load(t, s, sc)
	rec := sample(sc, snap.Now, snap.FreshToken, 1)
	wantOK(t, "insert", s.Insert(context.Background(), &rec))
	other := sample(sc, snap.Now, load(t, s, sc).FreshToken, 1)
	other.Status, other.Fingerprint = core.StatusInProgress, fpB
	wantConflict(t, "insert over a record", s.Insert(context.Background(), &other))
	c.same(t, s, rec)
}

func (c *contract) compareAndSet(t *testing.T) {
	s := c.newStore(t)
	ctx := context.Background()
	sc := c.scope(t, 0)
	absent := sample(sc, time.Now(), load(t, s, sc).FreshToken, 2)
	wantConflict(t, "compare-and-set of an absent scope", s.CompareAndSet(ctx, &absent, 1, absent.Token))
	if r := load(t, s, sc).Record; r.Exists() {
		t.Fatal("a refused compare-and-set created a record")
	}
	snap := load(t, s, sc)
	v1 := sample(sc, snap.Now, snap.FreshToken, 1)
	v1.Status = core.StatusInProgress
	wantOK(t, "insert", s.Insert(ctx, &v1))
	v2 := v1
	v2.Version, v2.LockedUntil = 2, v1.LockedUntil.Add(time.Minute)
	wantConflict(t, "compare-and-set on a stale version", s.CompareAndSet(ctx, &v2, 0, v1.Token))
	wantConflict(t, "compare-and-set on a future version", s.CompareAndSet(ctx, &v2, 2, v1.Token))
	wantConflict(t, "compare-and-set with another token", s.CompareAndSet(ctx, &v2, 1, v1.Token+1))
	c.same(t, s, v1)
	wantOK(t, "compare-and-set", s.CompareAndSet(ctx, &v2, 1, v1.Token))
	c.same(t, s, v2)
	// The old precondition is stale now: a lost update if it succeeded.
	v2b := v2
	v2b.Status = core.StatusCompleted
	wantConflict(t, "compare-and-set on the version just replaced", s.CompareAndSet(ctx, &v2b, 1, v1.Token))
	c.same(t, s, v2)
	// A new owner (token) with the next version.
	v3 := v2
	v3.Version, v3.Token = 3, load(t, s, sc).FreshToken
	wantOK(t, "compare-and-set to a new token", s.CompareAndSet(ctx, &v3, 2, v1.Token))
	wantConflict(t, "compare-and-set with the replaced token", s.CompareAndSet(ctx, &v2b, 3, v1.Token))
	c.same(t, s, v3)
}

func (c *contract) delete(t *testing.T) {
	s := c.newStore(t)
	ctx := context.Background()
	sc := c.scope(t, 0)
	wantConflict(t, "delete of an absent scope", s.Delete(ctx, sc, 1, 1))
	snap := load(t, s, sc)
	v1 := sample(sc, snap.Now, snap.FreshToken, 1)
	wantOK(t, "insert", s.Insert(ctx, &v1))
	v2 := v1
	v2.Version = 2
	wantOK(t, "compare-and-set", s.CompareAndSet(ctx, &v2, 1, v1.Token))
	wantConflict(t, "delete on a stale version", s.Delete(ctx, sc, 1, v1.Token))
	wantConflict(t, "delete with another token", s.Delete(ctx, sc, 2, v1.Token+1))
	c.same(t, s, v2)
	wantOK(t, "delete", s.Delete(ctx, sc, 2, v1.Token))
	if r := load(t, s, sc).Record; r.Exists() {
		t.Fatalf("deleted record still loads: %s", r.Describe())
	}
	wantConflict(t, "delete of a deleted record", s.Delete(ctx, sc, 2, v1.Token))
	wantConflict(t, "compare-and-set of a deleted record", s.CompareAndSet(ctx, &v2, 2, v1.Token))
	if r := load(t, s, sc).Record; r.Exists() {
		t.Fatalf("a refused write brought a deleted record back: %s", r.Describe())
	}
}

func (c *contract) reinsertAfterDelete(t *testing.T) {
	s := c.newStore(t)
	ctx := context.Background()
	sc := c.scope(t, 0)
	snap := load(t, s, sc)
	old := sample(sc, snap.Now, snap.FreshToken, 1)
	wantOK(t, "insert", s.Insert(ctx, &old))
	wantOK(t, "delete", s.Delete(ctx, sc, 1, old.Token))
	snap = load(t, s, sc)
	if snap.FreshToken <= old.Token {
		t.Fatalf("fresh token %d after deleting a record with token %d", snap.FreshToken, old.Token)
	}
	reborn := sample(sc, snap.Now, snap.FreshToken, 1) // versions restart at 1
	reborn.Status = core.StatusInProgress
	wantOK(t, "insert after delete", s.Insert(ctx, &reborn))
	// Same version, old token: the old incarnation's writer must not win.
	stale := old
	stale.Version = 2
	wantConflict(t, "compare-and-set with the old incarnation's token", s.CompareAndSet(ctx, &stale, 1, old.Token))
	wantConflict(t, "delete with the old incarnation's token", s.Delete(ctx, sc, 1, old.Token))
	c.same(t, s, reborn)
}

// tokensAcrossScopes: no two reads hand out the same fresh token, whatever
// their scopes (Snapshot.FreshToken), so a precondition meant for one
// scope's record never matches another's. Enough scopes that a store which
// partitions them (shards, partitions, nodes) has many in each part, and
// scopes that share a key.
func (c *contract) tokensAcrossScopes(t *testing.T) {
	s := c.newStore(t)
	ctx := context.Background()
	seen := make(map[core.Token]core.Scope)
	for i := range 512 {
		sc := c.scope(t, i/2)
		if i%2 == 1 {
			sc.Principal = "other"
		}
		for range 2 {
			snap := load(t, s, sc)
			if other, dup := seen[snap.FreshToken]; dup {
				t.Fatalf("fresh token %d handed out for %s and again for %s", snap.FreshToken, other, sc)
			}
			seen[snap.FreshToken] = sc
			if i%8 == 0 && !snap.Record.Exists() { // some scopes hold a record, read again below
				rec := sample(sc, snap.Now, snap.FreshToken, 1)
				wantOK(t, "insert", s.Insert(ctx, &rec))
			}
		}
	}
}

// deletesKeepTheOthers: deleting records, in waves and in a scattered
// order, loses no other record. Enough records that a store indexing them
// by hash has collisions everywhere, the case where a delete that mends
// its index (backward shift, tombstones, bucket splits) can lose a
// neighbour.
func (c *contract) deletesKeepTheOthers(t *testing.T) {
	s := c.newStore(t)
	ctx := context.Background()
	const n = 1024
	recs := make([]core.Record, n)
	for i := range recs {
		sc := c.scope(t, i)
		snap := load(t, s, sc)
		recs[i] = sample(sc, snap.Now, snap.FreshToken, 1)
		wantOK(t, "insert", s.Insert(ctx, &recs[i]))
	}
	deleted := make([]bool, n)
	for wave, stride := range []int{7, 3, 2} { // 613 is prime to n: i*613 mod n visits every record once
		for j := range n {
			i := j * 613 % n
			if deleted[i] || i%stride != wave%stride {
				continue
			}
			wantOK(t, "delete", s.Delete(ctx, recs[i].Scope, recs[i].Version, recs[i].Token))
			deleted[i] = true
		}
		for i := range recs {
			got := load(t, s, recs[i].Scope).Record
			switch {
			case deleted[i] && got.Exists():
				t.Fatalf("wave %d: record %d was deleted but loads %s", wave, i, got.Describe())
			case !deleted[i] && !c.d.SameRecord(&got, &recs[i]):
				t.Fatalf("wave %d: record %d, never deleted, loads %s", wave, i, got.Describe())
			}
		}
	}
}

func (c *contract) scopesSharingAKey(t *testing.T) {
	s := c.newStore(t)
	ctx := context.Background()
	base := c.scope(t, 0)
	scopes := []core.Scope{base, base, base, base}
	scopes[1].Principal = "other"
	scopes[2].Tenant = ""
	scopes[3].UseCase = "lin.other"
	recs := make([]core.Record, len(scopes))
	for i, sc := range scopes {
		snap := load(t, s, sc)
		recs[i] = sample(sc, snap.Now, snap.FreshToken, 1)
		recs[i].Response.StatusCode = 200 + i
		wantOK(t, fmt.Sprintf("insert %d", i), s.Insert(ctx, &recs[i]))
	}
	for i := range scopes {
		c.same(t, s, recs[i])
	}
	wantOK(t, "delete 1", s.Delete(ctx, scopes[1], 1, recs[1].Token))
	wantOK(t, "delete 0", s.Delete(ctx, scopes[0], 1, recs[0].Token))
	for i, sc := range scopes {
		if i < 2 {
			if r := load(t, s, sc).Record; r.Exists() {
				t.Fatalf("scope %d was deleted but loads %s", i, r.Describe())
			}
			continue
		}
		c.same(t, s, recs[i])
	}
	// A write under one scope with another scope's precondition.
	r3 := recs[3]
	r3.Scope = scopes[2]
	r3.Version = 2
	wantConflict(t, "compare-and-set with another scope's token", s.CompareAndSet(ctx, &r3, 1, recs[3].Token))
	c.same(t, s, recs[2])
}

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

func (c *contract) wait(t *testing.T) {
	s := c.newStore(t)
	ctx := context.Background()
	sc := c.scope(t, 0)
	snap := load(t, s, sc)
	rec := sample(sc, snap.Now, snap.FreshToken, 1)
	wantOK(t, "insert", s.Insert(ctx, &rec))
	const bound = 5 * time.Second
	// Unchanged: it returns by the deadline, with the context's error
	// unless it returned spuriously (allowed).
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	start := time.Now()
	err := s.Wait(short, sc, 1, rec.Token)
	cancel()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on an unchanged record: %v", err)
	}
	if time.Since(start) > bound {
		t.Fatalf("Wait outlived its context by %v", time.Since(start))
	}
	// A version that is not the record's returns at once.
	done := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 2*bound)
		defer cancel()
		done <- s.Wait(wctx, sc, 7, rec.Token)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait on a stale version: %v", err)
		}
	case <-time.After(bound):
		t.Fatalf("Wait on a stale version: still waiting after %v", bound)
	}
	woken := func(what string, version uint64, write func()) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 2*bound)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- s.Wait(wctx, sc, version, rec.Token) }()
		time.Sleep(10 * time.Millisecond)
		write()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Wait woken by %s: %v", what, err)
			}
		case <-time.After(bound):
			t.Fatalf("Wait not woken by %s within %v", what, bound)
		}
	}
	next := rec
	next.Version = 2
	woken("a compare-and-set", 1, func() { wantOK(t, "compare-and-set", s.CompareAndSet(ctx, &next, 1, rec.Token)) })
	woken("a delete", 2, func() { wantOK(t, "delete", s.Delete(ctx, sc, 2, rec.Token)) })
}

func (c *contract) cancelledContext(t *testing.T) {
	s := c.newStore(t)
	sc := c.scope(t, 0)
	snap := load(t, s, sc)
	rec := sample(sc, snap.Now, snap.FreshToken, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Load(ctx, sc); err == nil {
		t.Error("Load with a cancelled context succeeded")
	}
	if err := s.Insert(ctx, &rec); err == nil {
		t.Error("Insert with a cancelled context succeeded")
	}
	if err := s.CompareAndSet(ctx, &rec, 1, rec.Token); err == nil {
		t.Error("CompareAndSet with a cancelled context succeeded")
	}
	if err := s.Delete(ctx, sc, 1, rec.Token); err == nil {
		t.Error("Delete with a cancelled context succeeded")
	}
	if _, err := s.Due(ctx, store.DueSweep, 10); err == nil {
		t.Error("Due with a cancelled context succeeded")
	}
	if a, ok := s.(store.Applier); ok {
		p := core.PolicyDefault()
		if err := a.Apply(ctx, sc, core.Event{Kind: core.EventReserve, Fingerprint: fpA}, &p, new(store.Applied)); err == nil {
			t.Error("Apply with a cancelled context succeeded")
		}
	}
}

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
