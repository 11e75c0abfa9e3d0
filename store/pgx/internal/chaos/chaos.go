// Package chaos runs the real executor over a PostgreSQL store while a
// fault loop kills the store's backends, sets tiny statement timeouts and
// (optionally) restarts the server; then it stops the faults, lets the
// sweeper and the reconciler converge, and checks the invariants of SPEC §6
// (the clients, the ledger and the checks are internal/chaos's, which
// store/redis's harness shares). It takes the store as a factory, so that
// a test can hand it a driver with a planted bug and see it caught.
package chaos

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/chaos"
	"github.com/idemkit/idem/store"
)

// Config is one run.
type Config struct {
	DSN      string
	Clients  int           // concurrent clients, each retrying (16-32)
	Keys     int           // distinct keys the clients share
	Faults   time.Duration // how long the fault loop runs
	Restart  bool          // restart the server once (pg_ctlcluster), mid-run
	Seed     uint64
	NewStore func(ctx context.Context, pool *pgxpool.Pool, schema string) (store.Store, func(), error)
	Out      io.Writer
}

// AppNamePrefix starts the application_name of a run's connections; the
// rest is the seed and a random part, so that no two runs (nor anything
// else on the server) share it.
const AppNamePrefix = "idem-chaos-"

// Report is what the run found (internal/chaos's report) and the faults
// it injected.
type Report struct {
	chaos.Report
	Kills, Timeouts, Restarts int
}

// Run runs cfg and returns its report (and an error if it could not run).
// A committed write is durable in PostgreSQL, across a restart too: any
// acknowledged write lost is a violation.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	r := &run{cfg: cfg, schema: fmt.Sprintf("idem_chaos_%d", cfg.Seed), rep: &Report{}}
	pool, err := r.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	r.pool = pool
	defer pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{r.schema}.Sanitize()+" CASCADE") //nolint:errcheck
	s, closeStore, err := cfg.NewStore(ctx, pool, r.schema)
	if err != nil {
		return nil, err
	}
	defer closeStore()
	rep, err := chaos.Run(ctx, chaos.Config{Name: "chaospg", Clients: cfg.Clients, Keys: cfg.Keys, Seed: cfg.Seed}, s, r)
	if err != nil {
		return nil, err
	}
	r.rep.Report = *rep
	return r.rep, nil
}

// run is the PostgreSQL part of one Run: a chaos.Target.
type run struct {
	cfg    Config
	schema string // the store's, dropped at the end
	pool   *pgxpool.Pool
	rep    *Report

	appName   string       // of the run's connections, and of no other
	pids      backends     // the backends the run opened, the only ones the fault loop kills
	timeoutMs atomic.Int64 // the statement timeout the fault loop wants now (0: none)
}

var _ chaos.Target = (*run)(nil)

// Faults is the fault loop (injectFaults), then no statement timeout. A
// backend killed or a server restarted is no crash: PostgreSQL keeps what
// it committed.
func (r *run) Faults(ctx context.Context, _ func(kill func())) error {
	err := r.injectFaults(ctx)
	r.timeoutMs.Store(0)
	return err
}

// Open counts the records left in progress and unknown: those of the
// run's schema, which are the run's keys'.
func (r *run) Open(ctx context.Context, _ []core.Scope) (inProgress, unknown int, err error) {
	err = r.pool.QueryRow(ctx, "SELECT count(*) FILTER (WHERE status = 'in_progress'), count(*) FILTER (WHERE status = 'unknown') FROM "+
		pgx.Identifier{r.schema, "idem_records"}.Sanitize()).Scan(&inProgress, &unknown)
	return inProgress, unknown, err
}
