package redisstore

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// overdue inserts n records whose leases ended a minute ago, through s.
func overdue(t *testing.T, s *Store, n int, name string) []core.Scope {
	t.Helper()
	ctx := context.Background()
	var scopes []core.Scope
	for i := range n {
		sc := testScope(name + "-" + strconv.Itoa(i))
		snap, err := s.Load(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		rec := core.Record{Scope: sc, Status: core.StatusInProgress, Fingerprint: testFP, Token: snap.FreshToken, Version: 1,
			CreatedAt: snap.Now.Add(-time.Hour), LockedUntil: snap.Now.Add(-time.Minute + time.Duration(i)*time.Millisecond)}
		if err := s.Insert(ctx, &rec); err != nil {
			t.Fatal(err)
		}
		scopes = append(scopes, sc)
	}
	return scopes
}

func dueScopes(t *testing.T, s *Store, limit int) []core.Scope {
	t.Helper()
	recs, err := s.Due(context.Background(), store.DueSweep, limit)
	if err != nil {
		t.Fatal(err)
	}
	var scopes []core.Scope
	for _, r := range recs {
		scopes = append(scopes, r.Scope)
	}
	return scopes
}

// TestDueClaims: instances whose Due claims what it lists work on disjoint
// records, on every primary of the cluster; an instance's own claims never
// hide a record from it; a claim that ends (its worker died) frees the
// record for the others.
func TestDueClaims(t *testing.T) {
	c := clusterClient(t)
	a := newTestStore(t, c, Options{DueClaim: 300 * time.Millisecond})
	b, err := New(context.Background(), c, Options{Prefix: a.opt.Prefix, DueClaim: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	all := overdue(t, a, 40, "claims")
	first := dueScopes(t, a, 15)
	if !slices.Equal(first, all[:15]) {
		t.Fatalf("a's first batch: %v, want the 15 most overdue", first)
	}
	second := dueScopes(t, b, 100)
	if !slices.Equal(second, all[15:]) {
		t.Fatalf("b lists %d records, want the 25 that a did not claim", len(second))
	}
	if again := dueScopes(t, a, 15); !slices.Equal(again, first) {
		t.Fatal("a's own claims hid records from it")
	}
	if none := dueScopes(t, a, 100); len(none) != 15 {
		t.Fatalf("a lists %d records while b holds 25, want its own 15", len(none))
	}
	time.Sleep(400 * time.Millisecond)
	if freed := dueScopes(t, b, 100); !slices.Equal(freed, all) {
		t.Fatalf("after the claims ended b lists %d records, want all 40", len(freed))
	}
}

// TestDueDropsOrphanEntries: a record deleted behind the store's back
// leaves a due entry that the next Due drops, rather than list it (or
// fail) for ever.
func TestDueDropsOrphanEntries(t *testing.T) {
	ctx := context.Background()
	var c redis.UniversalClient = standaloneClient(t)
	s := newTestStore(t, c, Options{})
	scopes := overdue(t, s, 2, "orphan")
	o := s.scoped(scopes[0])
	if err := c.Del(ctx, o.keys[0]).Err(); err != nil {
		t.Fatal(err)
	}
	if got := dueScopes(t, s, 10); !slices.Equal(got, scopes[1:]) {
		t.Fatalf("Due lists %v, want only the record that exists", got)
	}
	if err := c.ZScore(ctx, s.l.index(o.b, true), o.m).Err(); err != redis.Nil {
		t.Fatalf("the orphan entry is still indexed: %v", err)
	}
}
