package pgxstore

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// TestWrittenRowsAreCheckedAgainstTheCore: the one-statement writes compute
// times and the token in SQL and then check the row they got back against
// core.Step. A deployment's trigger that changes a row as it is written
// (here its error code) makes the row differ from the core's, and the
// driver must say so, as a driver bug, on both such paths: a new key's
// reserve and the held path's completion.
func TestWrittenRowsAreCheckedAgainstTheCore(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{Table: "rewritten", PollInterval: -1})
	ctx := context.Background()
	held := reserved(t, s, testScope("rewritten-held"))
	for _, sql := range []string{
		`CREATE FUNCTION ` + db.schema + `.rewrite() RETURNS trigger LANGUAGE plpgsql AS $fn$
			BEGIN NEW.last_error_code := 'rewritten'; RETURN NEW; END $fn$`,
		`CREATE TRIGGER rewrite BEFORE INSERT OR UPDATE ON ` + s.n.qualified + ` FOR EACH ROW EXECUTE FUNCTION ` + db.schema + `.rewrite()`,
	} {
		if _, err := db.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	p := core.PolicyDefault()
	_, err := applyOver(ctx, s, &p, testScope("rewritten-new"), core.Event{Kind: core.EventReserve, Fingerprint: testFP})
	if !store.DriverBug(err) {
		t.Errorf("a new key's reserve whose row the trigger changed: %v, want a driver bug", err)
	}
	err = store.ApplyHeld(ctx, s, &held, core.Event{Kind: core.EventComplete, Token: held.Token, Response: core.Response{StatusCode: 201}}, &p, new(store.Applied))
	if !store.DriverBug(err) {
		t.Errorf("a held completion whose row the trigger changed: %v, want a driver bug", err)
	}
}

// TestPruneRollsBackWhatTheCoreWouldNotPrune: one row of a batch that the
// core refuses (a tombstone without a fingerprint, which no core write
// makes) is a driver bug, and nothing of the batch is deleted.
func TestPruneRollsBackWhatTheCoreWouldNotPrune(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{PollInterval: -1})
	ctx := context.Background()
	seed(t, s, scopes("prune-valid", 2), tombstone(-time.Minute))
	seed(t, s, scopes("prune-malformed", 1), func(sc core.Scope, now time.Time, tok core.Token) core.Record {
		r := tombstone(-time.Minute)(sc, now, tok)
		r.Fingerprint = core.Fingerprint{}
		return r
	})
	p := core.PolicyDefault()
	if n, err := s.Prune(ctx, &p, 10); n != 0 || !store.DriverBug(err) {
		t.Fatalf("Prune over a tombstone the core refuses: %d, %v; want 0 and a driver bug", n, err)
	}
	var left int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM `+s.n.qualified).Scan(&left); err != nil || left != 3 {
		t.Fatalf("%d records left (%v), want all 3: the batch rolled back", left, err)
	}
}
