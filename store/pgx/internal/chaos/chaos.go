// Package chaos runs the real executor over a PostgreSQL store while a
// fault loop kills the store's backends, sets tiny statement timeouts and
// (optionally) restarts the server; then it stops the faults, lets the
// sweeper and the reconciler converge, and checks the invariants of SPEC §6.
// It takes the store as a factory, so that a test can hand it a driver with
// a planted bug and see it caught.
package chaos

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
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

// Run runs cfg and returns its report (and an error if it could not run).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	r := &run{cfg: cfg, p: policy(), schema: fmt.Sprintf("idem_chaos_%d", cfg.Seed), rep: &Report{}}
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
	r.rec = linearizability.NewRecorder(s, nil)
	r.led = &ledger{charges: map[core.Scope][]charge{}}
	r.seen = &answers{by: map[core.Scope][]idem.Response{}}
	r.keys = keys(cfg)

	if err := r.underFaults(ctx); err != nil {
		return nil, err
	}
	// The faults are over: one executor converges the records, on a
	// healthy store, then asks every key once more.
	ex, _ := idem.New(r.rec.Client(cfg.Clients), idem.WithPolicy(r.p))
	r.converge(ctx, ex)
	final := r.finalAnswers(ctx, ex)
	r.rep.Requests, r.rep.Executed, r.rep.Replayed, r.rep.Errors = int(r.reqs.Load()), int(r.executed.Load()), int(r.replayed.Load()), int(r.errs.Load())
	r.check(ctx, final)
	return r.rep, nil
}

// run is what the steps of one Run share.
type run struct {
	cfg    Config
	p      core.Policy
	schema string // the store's, dropped at the end
	pool   *pgxpool.Pool
	rec    *linearizability.Recorder // records every store call, the clients' and the workers', for the lifecycle history
	led    *ledger
	seen   *answers // what the clients got, key by key
	keys   []core.Scope
	rep    *Report

	appName   string       // of the run's connections, and of no other
	pids      backends     // the backends the run opened, the only ones the fault loop kills
	timeoutMs atomic.Int64 // the statement timeout the fault loop wants now (0: none)

	reqs, executed, replayed, errs atomic.Int64 // the clients' requests, by how they ended
}

// policy is the default with leases, waits and backoffs short enough that a
// run of seconds sees many leases end and many records reconciled.
func policy() core.Policy {
	p := core.PolicyDefault()
	p.LeaseDuration = 400 * time.Millisecond
	p.InFlightWait = 50 * time.Millisecond
	p.ReconcileBackoffBase = 20 * time.Millisecond
	p.ReconcileBackoffMax = 200 * time.Millisecond
	p.ReconcileAttemptsMax = 1000
	return p
}

// keys are the cfg.Keys scopes the clients share, named after the seed.
func keys(cfg Config) []core.Scope {
	scopes := make([]core.Scope, cfg.Keys)
	for i := range scopes {
		scopes[i] = core.Scope{Tenant: "chaos", Principal: "client", UseCase: "payments.create", Key: fmt.Sprintf("%d-%06d-chaos-key", cfg.Seed, i)}
	}
	return scopes
}

// fingerprint is every request's: the clients race on a key, they never
// send it two different requests.
var fingerprint = core.Fingerprint{7}

// underFaults runs the clients, a sweeper and a reconciler while the fault
// loop runs, then lifts the faults and stops them all.
func (r *run) underFaults(ctx context.Context) error {
	stopClients, err := r.startClients(ctx)
	if err != nil {
		return err
	}
	stopBackground := r.startBackground(ctx)
	err = r.injectFaults(ctx)
	r.timeoutMs.Store(0)
	stopClients()
	stopBackground()
	return err
}
