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
	var b [6]byte
	_, _ = rand.Read(b[:])
	db := &testDB{pool: pool, schema: "idem_test_" + hex.EncodeToString(b[:]), trips: trips}
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
