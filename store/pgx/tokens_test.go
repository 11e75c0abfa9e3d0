package pgxstore

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// TestTokensBeyond32Bits: fencing tokens are 64-bit (core.Token, a bigint
// column). With the sequence past 2^62 every path keeps them exactly: a
// load's fresh token, an executed attempt's, the replay's record, Due.
func TestTokensBeyond32Bits(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{PollInterval: -1})
	ctx := context.Background()
	const from = 1<<62 + 12345
	if _, err := db.pool.Exec(ctx, `SELECT setval($1::regclass, $2)`, s.n.sequence, int64(from)); err != nil {
		t.Fatalf("setting the token sequence to %d: %v", int64(from), err)
	}
	sc := testScope("tokens-64")
	snap, err := s.Load(ctx, sc)
	if err != nil || snap.FreshToken <= from {
		t.Fatalf("Load: fresh token %d (%v), want one past %d", snap.FreshToken, err, int64(from))
	}
	ex, err := idem.New(s)
	if err != nil {
		t.Fatal(err)
	}
	var token core.Token
	req := idem.Request{Scope: sc, Fingerprint: testFP}
	action := func(_ context.Context, at idem.Attempt) (idem.Response, error) {
		token = at.Token
		return idem.Response{StatusCode: 201}, nil
	}
	if r, err := ex.Do(ctx, req, action); err != nil || !r.Recorded || token <= snap.FreshToken {
		t.Fatalf("Do: %+v, %v, token %d; want recorded with a token past %d", r, err, token, snap.FreshToken)
	}
	if r, err := ex.Do(ctx, req, action); err != nil || r.Kind != idem.ResultReplayed {
		t.Fatalf("replay: %+v, %v", r, err)
	}
	if snap, err = s.Load(ctx, sc); err != nil || snap.Record.Token != token {
		t.Fatalf("the record loads with token %d (%v), want %d", snap.Record.Token, err, token)
	}
	seed(t, s, []core.Scope{testScope("tokens-64-due")}, leaseRanOut(time.Second))
	due, err := s.Due(ctx, store.DueSweep, 10)
	if err != nil || len(due) != 1 || due[0].Token <= from {
		t.Fatalf("Due: %d records (%v), want the one seeded with a token past %d", len(due), err, int64(from))
	}
}

// TestPrunedTokensAreNeverHandedOutAgain: pruning the record that holds the
// largest token leaves the sequence where it was: the key reused gets a
// token greater than its pruned record's (SPEC §4, "never reused for a
// scope, even after the record was pruned and the key reused").
func TestPrunedTokensAreNeverHandedOutAgain(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{PollInterval: -1})
	ctx := context.Background()
	kept, pruned := testScope("tokens-kept"), testScope("tokens-pruned")
	seed(t, s, []core.Scope{kept}, tombstone(time.Hour))
	seed(t, s, []core.Scope{pruned}, tombstone(-time.Minute)) // the largest token
	snap, err := s.Load(ctx, pruned)
	if err != nil {
		t.Fatal(err)
	}
	gone := snap.Record.Token
	p := core.PolicyDefault()
	if n, err := s.Prune(ctx, &p, 10); n != 1 || err != nil {
		t.Fatalf("Prune: %d, %v; want the one tombstone past its retention", n, err)
	}
	if snap, err = s.Load(ctx, pruned); err != nil || snap.Record.Exists() || snap.FreshToken <= gone {
		t.Fatalf("after the prune: %s, fresh token %d (%v); want absent and a token past the pruned %d", snap.Record.Describe(), snap.FreshToken, err, gone)
	}
	a, err := applyOver(ctx, s, &p, pruned, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
	if err != nil || a.Transition.Decision.Token <= snap.FreshToken {
		t.Fatalf("the key reused executes with token %d (%v), want one past %d", a.Transition.Decision.Token, err, snap.FreshToken)
	}
}
