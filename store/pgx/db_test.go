package pgxstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// dsn is the test server (IDEM_PG_DSN).
func dsn() string {
	if v := os.Getenv("IDEM_PG_DSN"); v != "" {
		return v
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

var skipOnce sync.Once

// roundTrips counts the statements a pool sends: one per query, which with
// the extended protocol and cached statements is one round trip each.
type roundTrips struct{ n atomic.Int64 }

func (c *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// testDB is one test's own schema on the server, dropped at the end.
type testDB struct {
	pool   *pgxpool.Pool
	schema string
	trips  *roundTrips
}

// newTestDB connects and creates a schema for t. Without a server the test
// skips with one loud line, except under CI=true, where it fails.
func newTestDB(t testing.TB) *testDB {
	t.Helper()
	return newTestDBConns(t, 32)
}

// newTestDBConns is newTestDB with a pool of at most maxConns connections
// (a benchmark gives each client one, as pgbench does).
func newTestDBConns(t testing.TB, maxConns int32) *testDB {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dsn())
	if err != nil {
		t.Fatalf("IDEM_PG_DSN: %v", err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "idem_test_" + hex.EncodeToString(b[:])
	// The test's connections carry its schema's name, unique to this test
	// of this run: a test terminates or watches only backends of its own
	// (soloStore), never those of another run or another service.
	cfg.ConnConfig.RuntimeParams["application_name"] = schema
	trips := new(roundTrips)
	cfg.ConnConfig.Tracer = trips
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL at %s: %v (CI=true: the store/pgx tests must run)", dsn(), err)
		}
		skipOnce.Do(func() {
			fmt.Fprintf(os.Stderr, "!!! store/pgx: no PostgreSQL at %s (%v): SKIPPING every store/pgx test (set IDEM_PG_DSN, or run .ci/run)\n", dsn(), err)
		})
		t.SkipNow()
	}
	db := &testDB{pool: pool, schema: schema, trips: trips}
	t.Cleanup(func() {
		_, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{db.schema}.Sanitize()+" CASCADE")
		pool.Close()
		if err != nil {
			t.Errorf("dropping schema %s: %v", db.schema, err)
		}
	})
	return db
}

// newStore migrates o (in t's schema) and returns its Store, closed at the end.
func (db *testDB) newStore(t testing.TB, o Options) *Store {
	t.Helper()
	ctx := context.Background()
	o.Schema = db.schema
	if err := Migrate(ctx, db.pool, o); err != nil {
		t.Fatal(err)
	}
	s, err := New(ctx, db.pool, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// soloStore is a Store over a pool of one connection of its own, under an
// application_name of its own, and the PID of that connection's backend:
// the one backend a test may terminate, or watch wait on a lock.
func (db *testDB) soloStore(t *testing.T, name string) (*Store, uint32) {
	t.Helper()
	return db.soloStoreWith(t, name, Options{PollInterval: -1})
}

// soloStoreWith is soloStore with the Store's options o (in the test's
// schema).
func (db *testDB) soloStoreWith(t *testing.T, name string, o Options) (*Store, uint32) {
	t.Helper()
	ctx := context.Background()
	cfg := db.pool.Config().Copy()
	cfg.MaxConns, cfg.MinConns = 1, 0
	cfg.ConnConfig.RuntimeParams["application_name"] = db.schema + "-" + name
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := conn.Conn().PgConn().PID()
	conn.Release()
	o.Schema = db.schema
	s, err := New(ctx, pool, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, pid
}

// waitingOnLock reports whether backend pid waits on a lock.
func (db *testDB) waitingOnLock(t *testing.T, pid uint32) bool {
	t.Helper()
	var waiting bool
	err := db.pool.QueryRow(context.Background(), `SELECT count(*) > 0 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, int32(pid)).Scan(&waiting)
	if err != nil {
		t.Fatal(err)
	}
	return waiting
}

// lockWaiters counts the backends of this test's pools that wait on a lock.
func (db *testDB) lockWaiters(t *testing.T) int {
	t.Helper()
	var n int
	err := db.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE wait_event_type = 'Lock' AND (application_name = $1 OR starts_with(application_name, $1 || '-'))`, db.schema).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// terminate ends backend pid of a soloStore's pool, named as the test named
// it (a PID the server has since given to another client is left alone).
func (db *testDB) terminate(t *testing.T, pid uint32, name string) {
	t.Helper()
	var n int
	err := db.pool.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE pid = $1 AND application_name = $2`, int32(pid), db.schema+"-"+name).Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("terminating backend %d: %d terminated (%v)", pid, n, err)
	}
}
