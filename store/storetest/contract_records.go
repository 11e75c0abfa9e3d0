package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
)

// The record cases: what Load, Insert, CompareAndSet and Delete do to one
// scope's record, and the preconditions (version and token) that keep a
// writer who lost the record from changing it.

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
		t.Fatal("a compare-and-set whose precondition failed created a record")
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
		t.Fatalf("a write whose precondition failed brought a deleted record back: %s", r.Describe())
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
