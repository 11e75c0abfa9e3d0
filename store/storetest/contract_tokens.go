package storetest

import (
	"context"
	"fmt"
	"sync"
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

// tokensConcurrently: fresh tokens never repeat when the reads of many
// scopes run at once, in rounds started together: a store that hands out
// tokens per part (a counter per shard, node or hash slot) must keep the
// parts' tokens apart even at the same instant, which reads made one after
// another (tokens-across-scopes) never show. Meanwhile records are
// inserted and deleted, and each scope's tokens keep growing.
func (c *contract) tokensConcurrently(t *testing.T) {
	s := c.newStore(t)
	const goroutines, rounds, scopesEach = 8, 96, 16
	var mu sync.Mutex
	seen := make(map[core.Token]core.Scope)
	var problems []string
	problem := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	goAll(goroutines, func(g int, round func()) {
		ctx := context.Background()
		last := make(map[core.Scope]core.Token)
		for r := range rounds {
			round()
			sc := c.scope(t, g*scopesEach+r%scopesEach)
			snap, err := s.Load(ctx, sc)
			if err != nil {
				problem("load %s: %v", sc, err)
				return
			}
			mu.Lock()
			other, dup := seen[snap.FreshToken]
			seen[snap.FreshToken] = sc
			mu.Unlock()
			switch {
			case dup:
				problem("fresh token %d handed out for %s and again for %s", snap.FreshToken, other, sc)
			case snap.FreshToken <= last[sc]:
				problem("%s: fresh token %d after %d", sc, snap.FreshToken, last[sc])
			}
			last[sc] = snap.FreshToken
			if rec := snap.Record; rec.Exists() && r%3 == 0 {
				err = s.Delete(ctx, sc, rec.Version, rec.Token)
			} else if !rec.Exists() && r%2 == 0 {
				rec := sample(sc, snap.Now, snap.FreshToken, 1)
				err = s.Insert(ctx, &rec)
			}
			if err != nil {
				problem("%s: %v", sc, err)
			}
		}
	})
	for i, p := range problems {
		if i == 5 {
			t.Fatalf("... and %d more", len(problems)-i)
		}
		t.Error(p)
	}
}
