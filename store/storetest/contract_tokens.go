package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
)

// The token cases: a load's fresh token never repeats, within a scope or
// across scopes, so that a precondition meant for one record never matches
// another's. The tokens a reserve hands out: contract_reserve_tokens.go.

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
