package pgxstore

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// reserved makes an in_progress record for sc and returns it.
func reserved(t *testing.T, s store.Store, sc core.Scope) core.Record {
	t.Helper()
	p := core.PolicyDefault()
	var a store.Applied
	if err := store.Apply(context.Background(), s, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP}, &p, &a); err != nil {
		t.Fatal(err)
	}
	return a.Record
}

// lockRow holds the row of sc locked in a transaction until the test ends,
// or until the returned function releases it, so that a write to it blocks.
func lockRow(t *testing.T, db *testDB, s *Store, sc core.Scope) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	release = func() { _ = tx.Rollback(context.Background()) }
	t.Cleanup(release)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+s.n.qualified+` WHERE `+scopeMatch+` FOR UPDATE`, scopeNamed(sc)); err != nil {
		t.Fatal(err)
	}
	return release
}

func TestErrors(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{})
	ctx := context.Background()

	t.Run("unique-violation-is-conflict", func(t *testing.T) {
		rec := reserved(t, s, testScope("err-unique"))
		if err := s.Insert(ctx, &rec); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("insert over a record: %v, want store.ErrConflict", err)
		}
	})
	t.Run("statement-timeout-is-ambiguous", func(t *testing.T) {
		sc := testScope("err-timeout")
		rec := reserved(t, s, sc)
		lockRow(t, db, s, sc)
		cfg := db.pool.Config().Copy()
		// Long enough that New's own reads finish on a loaded server (20 ms
		// did not, with two runs of the suite and more at once), short
		// enough to wait out: the compare-and-set waits on the locked row.
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = "500ms"
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		short, err := New(ctx, pool, Options{Schema: db.schema, PollInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		next := rec
		next.Version++
		err = short.CompareAndSet(ctx, &next, rec.Version, rec.Token)
		var pe *pgconn.PgError
		if !errors.Is(err, ErrAmbiguous) || errors.Is(err, store.ErrConflict) || !errors.As(err, &pe) || pe.Code != codeQueryCanceled {
			t.Fatalf("compare-and-set past the statement timeout: %v, want ErrAmbiguous (57014), never ErrConflict", err)
		}
	})
	t.Run("connection-lost-mid-write-is-ambiguous", func(t *testing.T) {
		// The write runs on a connection of its own, whose backend alone
		// the test terminates (by its PID and name): another write blocked
		// on the same row, as another test run's or another service's
		// would be, must come through.
		sc := testScope("err-killed")
		rec := reserved(t, s, sc)
		release := lockRow(t, db, s, sc)
		victim, pid := db.soloStore(t, "victim")
		next := rec
		next.Version++
		killed, bystander := make(chan error, 1), make(chan error, 1)
		go func() { killed <- victim.CompareAndSet(ctx, &next, rec.Version, rec.Token) }()
		go func() { bystander <- s.CompareAndSet(ctx, &next, rec.Version, rec.Token) }()
		for !db.waitingOnLock(t, pid) || db.lockWaiters(t) < 2 {
			select {
			case err := <-killed:
				t.Fatalf("the write returned before it was killed: %v", err)
			default:
			}
		}
		db.terminate(t, pid, "victim")
		err := <-killed
		if err == nil || !errors.Is(err, ErrAmbiguous) || errors.Is(err, store.ErrConflict) {
			t.Fatalf("write on a killed connection: %v, want ErrAmbiguous, never ErrConflict or success", err)
		}
		release()
		if err := <-bystander; err != nil {
			t.Fatalf("the other write blocked on the row: %v, want it to come through (only the test's own backend is terminated)", err)
		}
	})
	t.Run("cancelled-context-is-a-context-error", func(t *testing.T) {
		sc := testScope("err-cancel")
		rec := reserved(t, s, sc)
		lockRow(t, db, s, sc)
		solo, pid := db.soloStore(t, "cancelled")
		cctx, cancel := context.WithCancel(ctx)
		next := rec
		next.Version++
		done := make(chan error, 1)
		go func() { done <- solo.CompareAndSet(cctx, &next, rec.Version, rec.Token) }()
		for !db.waitingOnLock(t, pid) {
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, ErrAmbiguous) {
			t.Fatalf("cancelled write: %v, want context.Canceled", err)
		}
		if _, err := s.Load(cctx, sc); !errors.Is(err, context.Canceled) {
			t.Fatalf("load on a cancelled context: %v", err)
		}
	})
	t.Run("serialization-failure-and-deadlock-are-retried-a-bounded-number-of-times", func(t *testing.T) {
		for _, code := range []string{codeSerializationFailure, codeDeadlock} {
			calls := 0
			err := s.ops().run(ctx, func() error { calls++; return &pgconn.PgError{Code: code} })
			if want := 1 + s.opt.SerializationRetries; calls != want || err == nil {
				t.Fatalf("%s: %d calls (want %d), err %v", code, calls, want, err)
			}
			calls = 0
			err = s.ops().run(ctx, func() error {
				calls++
				if calls < 3 {
					return &pgconn.PgError{Code: code}
				}
				return nil
			})
			if err != nil || calls != 3 {
				t.Fatalf("%s: a retry that succeeds: %d calls, %v", code, calls, err)
			}
		}
		if s.opt.SerializationRetries != 3 {
			t.Fatalf("a Store of the zero Options retries %d times, want 3 (Options.SerializationRetries)", s.opt.SerializationRetries)
		}
		// Not retried: a unique violation, a statement timeout, and the
		// other rollbacks of class 40, 40003 (statement completion unknown:
		// it may have applied) and 40002 (an integrity violation at commit).
		for _, code := range []string{codeUniqueViolation, codeQueryCanceled, "40003", "40002"} {
			calls := 0
			_ = s.ops().run(ctx, func() error { calls++; return &pgconn.PgError{Code: code} })
			if calls != 1 {
				t.Fatalf("%s was retried: %d calls", code, calls)
			}
		}
		calls := 0
		calls = 0
		_ = ops{s: s, tx: true}.run(ctx, func() error { calls++; return &pgconn.PgError{Code: codeDeadlock} })
		if calls != 1 {
			t.Fatalf("a statement in the caller's transaction was retried: %d calls", calls)
		}
	})
}

func TestConfiguration(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	t.Run("no-table", func(t *testing.T) {
		_, err := New(ctx, db.pool, Options{Schema: db.schema, Table: "missing"})
		if err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "pgxstore.Migrate") {
			t.Fatalf("New without a table: %v, want a message that says to run pgxstore.Migrate", err)
		}
	})
	t.Run("old-and-new-schema-versions", func(t *testing.T) {
		o := Options{Schema: db.schema, Table: "versions"}
		s := db.newStore(t, o)
		for _, c := range []struct{ comment, want string }{
			{"idem schema version 0", "pgxstore.Migrate"},
			{"idem schema version 99", "upgrade github.com/idemkit/idem"},
			{"some other table", "not an idem table"},
		} {
			if _, err := db.pool.Exec(ctx, "COMMENT ON TABLE "+s.n.qualified+" IS '"+c.comment+"'"); err != nil {
				t.Fatal(err)
			}
			if _, err := New(ctx, db.pool, o); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("table comment %q: New says %v, want %q", c.comment, err, c.want)
			}
		}
		if err := Migrate(ctx, db.pool, o); err == nil {
			t.Fatal("Migrate over a table of an unknown version succeeded")
		}
	})
	t.Run("bad-names", func(t *testing.T) {
		for _, o := range []Options{{Table: strings.Repeat("t", TableBytesMax+1)}, {Table: "a\x00b"}, {Schema: "bad\xff"}} {
			if _, err := New(ctx, db.pool, o); err == nil {
				t.Errorf("New(%+v) succeeded", o)
			}
			if err := Migrate(ctx, db.pool, o); err == nil {
				t.Errorf("Migrate(%+v) succeeded", o)
			}
		}
		if _, err := New(ctx, nil, Options{}); err == nil {
			t.Error("New with a nil pool succeeded")
		}
	})
	t.Run("names-are-quoted", func(t *testing.T) {
		// A name that would inject SQL if it were not quoted works as a name.
		o := Options{Schema: db.schema + `"; DROP SCHEMA public; --`, Table: `Rec"ords; DROP TABLE x`}
		s := db.newStore(t, o)
		t.Cleanup(func() {
			_, _ = db.pool.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{o.Schema}.Sanitize()+" CASCADE")
		})
		rec := reserved(t, s, testScope("quoted"))
		snap, err := s.Load(ctx, rec.Scope)
		if err != nil || snap.Record.Token != rec.Token {
			t.Fatalf("load: %v %v", snap.Record.Describe(), err)
		}
	})
	t.Run("concurrent-migrations", func(t *testing.T) {
		o := Options{Schema: db.schema, Table: "concurrent"}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() { defer wg.Done(); errs <- Migrate(ctx, db.pool, o) }()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("one of 8 concurrent Migrates: %v", err)
			}
		}
		if _, err := New(ctx, db.pool, o); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("migration-files", func(t *testing.T) {
		ms, err := migrations()
		if err != nil || len(ms) != SchemaVersion || ms[len(ms)-1].version != SchemaVersion {
			t.Fatalf("%d migrations (%v), want %d ending at SchemaVersion", len(ms), err, SchemaVersion)
		}
		for _, m := range ms {
			if !strings.Contains(m.up, schemaVersionMark+itoa(m.version)) {
				t.Errorf("migration %04d does not record its version in the table comment", m.version)
			}
		}
	})
}

// deadPort is a local TCP port where nothing listens (one just closed).
func deadPort(t *testing.T) uint16 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(l.Addr().(*net.TCPAddr).Port)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// TestUnreachableIsNotAmbiguous: when the pool cannot connect (the dial is
// refused), no statement was sent: every method fails with ErrNotSent, an
// outage (the executor fails closed, 503) but never ErrAmbiguous, and the
// error names the driver once.
func TestUnreachableIsNotAmbiguous(t *testing.T) {
	db := newTestDB(t)
	db.newStore(t, Options{}) // the table
	ctx := context.Background()
	cfg := db.pool.Config().Copy()
	var down atomic.Bool
	port := deadPort(t)
	cfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
		if down.Load() {
			cc.Host, cc.Port, cc.Fallbacks = "127.0.0.1", port, nil
		}
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := New(ctx, pool, Options{Schema: db.schema, PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	rec := reserved(t, s, testScope("unreachable"))
	down.Store(true)
	pool.Reset() // every new connection dials the dead port
	p := core.PolicyDefault()
	_, loadErr := s.Load(ctx, rec.Scope)
	_, dueErr := s.Due(ctx, store.DueSweep, 10)
	for what, err := range map[string]error{
		"load":            loadErr,
		"insert":          s.Insert(ctx, &rec),
		"compare-and-set": s.CompareAndSet(ctx, &rec, rec.Version, rec.Token),
		"delete":          s.Delete(ctx, rec.Scope, rec.Version, rec.Token),
		"due":             dueErr,
		"apply":           s.Apply(ctx, testScope("unreachable-new"), core.Event{Kind: core.EventReserve, Fingerprint: testFP}, &p, new(store.Applied)),
	} {
		if !errors.Is(err, ErrNotSent) || errors.Is(err, ErrAmbiguous) || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrRejected) {
			t.Errorf("%s with the server unreachable: %v, want ErrNotSent (not ambiguous)", what, err)
		}
	}
	logged := (&store.Error{Method: store.MethodDue, Err: dueErr}).Error()
	if !strings.HasPrefix(logged, "idem/store: due: pgxstore: due: ") || strings.Count(logged, "pgxstore:") != 1 {
		t.Errorf("a sweeper logs %q: want one prefix per layer (idem/store: due: pgxstore: due: <cause>)", logged)
	}
	ex, err := idem.New(s)
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	_, err = ex.Do(ctx, idem.Request{Scope: testScope("unreachable-do"), Fingerprint: testFP}, func(context.Context, idem.Attempt) (idem.Response, error) {
		runs++
		return idem.Response{StatusCode: 200}, nil
	})
	if !errors.Is(err, idem.ErrStoreUnavailable) || runs != 0 {
		t.Fatalf("Do with the server unreachable: %v (%d runs), want ErrStoreUnavailable and no run", err, runs)
	}
}

// TestErrorsNameTheDriverOnce: whatever the class, an error says
// "pgxstore: <statement>: <what happened>: <cause>" with one prefix.
func TestErrorsNameTheDriverOnce(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want error
	}{
		{ctx, &pgconn.PgError{Code: codeQueryCanceled, Message: "canceling statement due to statement timeout"}, ErrAmbiguous},
		{ctx, &pgconn.PgError{Code: "23514", Message: "violates check constraint"}, store.ErrRejected},
		{ctx, &pgconn.PgError{Code: "22021", Message: "invalid byte sequence"}, store.ErrRejected},
		{ctx, &pgconn.PgError{Code: codeUniqueViolation, ConstraintName: "records_pkey"}, store.ErrConflict},
		{ctx, errors.New("unexpected EOF"), ErrAmbiguous},
		{cancelled, errors.New("context canceled"), context.Canceled},
	} {
		err := classify(c.ctx, "due", c.err)
		msg := err.Error()
		if !errors.Is(err, c.want) || !strings.HasPrefix(msg, "pgxstore: due: ") || strings.Count(msg, "pgxstore:") != 1 {
			t.Errorf("classify(%v): %q, want errors.Is %v and one prefix", c.err, msg, c.want)
		}
	}
}
