package pgxstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// skewDatabaseClock makes s's load function read a clock a day ahead of
// the host's: the original is renamed and wrapped. (The test's server and
// host share a clock, so only a skew shows whose clock a Load returns.)
func skewDatabaseClock(t *testing.T, db *testDB, s *Store) {
	t.Helper()
	ctx := context.Background()
	fn := func(suffix string) string { return pgx.Identifier{db.schema, s.n.table + suffix}.Sanitize() }
	var result string
	if err := db.pool.QueryRow(ctx, `SELECT pg_get_function_result($1::regprocedure)`, fn("_load")+"(text, text, text, text)").Scan(&result); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`ALTER FUNCTION ` + fn("_load") + `(text, text, text, text) RENAME TO ` + pgx.Identifier{s.n.table + "_load_unskewed"}.Sanitize(),
		`CREATE FUNCTION ` + fn("_load") + `(a text, b text, c text, d text) RETURNS ` + result + ` LANGUAGE sql VOLATILE AS $fn$
			SELECT u.now + interval '1 day', u.tok, ` + prefixed("u", recordColList) + ` FROM ` + fn("_load_unskewed") + `(a, b, c, d) AS u $fn$`,
	} {
		if _, err := db.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoadReadsTheDatabaseClock: Snapshot.Now is the database's clock, not
// the host's (store.Snapshot: servers with skewed clocks must agree on
// leases and TTLs), and the load-step-write path times the record by it.
func TestLoadReadsTheDatabaseClock(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{PollInterval: -1})
	skewDatabaseClock(t, db, s)
	ctx := context.Background()
	snap, err := s.Load(ctx, testScope("skewed-load"))
	if err != nil {
		t.Fatal(err)
	}
	if ahead := time.Until(snap.Now); ahead < 23*time.Hour {
		t.Fatalf("Load's Now is %v ahead of the host, want the database's clock (a day ahead)", ahead)
	}
	p := core.PolicyDefault()
	a, err := applyOver(ctx, store.HideApplier(s), &p, testScope("skewed-reserve"), core.Event{Kind: core.EventReserve, Fingerprint: testFP})
	if err != nil {
		t.Fatal(err)
	}
	if ahead := time.Until(a.Record.CreatedAt); ahead < 23*time.Hour {
		t.Fatalf("a reserve by load, step and write was created %v ahead of the host, want a day (the database's clock)", ahead)
	}
}

// TestStatementTimesInACallersTransaction: in a caller's transaction every
// statement's time is the statement's, not the transaction's start (now()):
// a transaction that began a while ago must not judge leases and TTLs at
// that instant. The transaction began 20 ms before its first store call.
func TestStatementTimesInACallersTransaction(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{ReadFirst: true, PollInterval: -1})
	ctx := context.Background()
	p := core.PolicyDefault()
	completed := reserved(t, s, testScope("tx-time-replay"))
	if err := store.ApplyHeld(ctx, s, &completed, core.Event{Kind: core.EventComplete, Token: completed.Token, Response: core.Response{StatusCode: 201}}, &p, new(store.Applied)); err != nil {
		t.Fatal(err)
	}
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var began time.Time
	if err := tx.QueryRow(ctx, `SELECT transaction_timestamp()`).Scan(&began); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	ts := s.WithTx(tx)
	after := func(what string, at time.Time) {
		t.Helper()
		if !at.After(began) {
			t.Errorf("%s in the transaction is timed %v, the transaction's start: want the statement's time", what, at)
		}
	}
	snap, err := ts.Load(ctx, testScope("tx-time-load"))
	if err != nil {
		t.Fatal(err)
	}
	after("Load", snap.Now)
	a, err := applyOver(ctx, ts, &p, completed.Scope, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
	if err != nil || a.Transition.Decision.Kind != core.DecisionReplay {
		t.Fatalf("replay in the transaction: %v, %v", a.Transition.Decision.Kind, err)
	}
	after("ReadFirst's read of a replay", a.Now)
	a, err = applyOver(ctx, ts, &p, testScope("tx-time-new"), core.Event{Kind: core.EventReserve, Fingerprint: testFP})
	if err != nil || a.Transition.Decision.Kind != core.DecisionExecute {
		t.Fatalf("reserve in the transaction: %v, %v", a.Transition.Decision.Kind, err)
	}
	after("a new key's reserve", a.Now)
}

// TestPolicyDurationsFinerThanTheDatabase: the core accepts durations with
// nanoseconds; the database keeps times to the microsecond, truncating
// them, and the check of every row a statement wrote against core.Step
// must compare them so, or every such write would be a driver bug.
func TestPolicyDurationsFinerThanTheDatabase(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{PollInterval: -1})
	ctx := context.Background()
	p := core.PolicyDefault()
	p.LeaseDuration, p.TTL = time.Minute+999*time.Nanosecond, time.Hour+999*time.Nanosecond
	sc := testScope("nanoseconds")
	a, err := applyOver(ctx, s, &p, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
	if err != nil {
		t.Fatalf("reserve with a lease of %v: %v", p.LeaseDuration, err)
	}
	held := a.Record
	if err := store.ApplyHeld(ctx, s, &held, core.Event{Kind: core.EventComplete, Token: held.Token, Response: core.Response{StatusCode: 200}}, &p, &a); err != nil {
		t.Fatalf("completion with a TTL of %v: %v", p.TTL, err)
	}
	snap, err := s.Load(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	if want := a.Record.ExpiresAt.Truncate(time.Microsecond); !snap.Record.ExpiresAt.Equal(want) {
		t.Fatalf("expires_at loads as %v, want the core's %v truncated to %v", snap.Record.ExpiresAt, a.Record.ExpiresAt, want)
	}
}
