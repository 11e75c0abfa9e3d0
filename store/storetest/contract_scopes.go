package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/idemkit/idem/core"
)

// The scope cases: records are kept apart, so that writing or deleting one
// never changes another, whether they share a key or an index's bucket.

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
