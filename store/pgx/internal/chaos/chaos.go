// Package chaos runs the real executor over a PostgreSQL store while a
// fault loop kills the store's backends, sets tiny statement timeouts and
// (optionally) restarts the server; then it stops the faults, lets the
// sweeper and the reconciler converge, and checks the invariants of SPEC §6.
// It takes the store as a factory, so that a test can hand it a driver with
// a planted bug and see it caught.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// Report is what the run found; Violations empty means it passed.
type Report struct {
	Requests, Executed, Replayed, Errors, Kills, Timeouts, Restarts int
	DoubleExecutions, LostCompletions, InProgressLeft, UnknownLeft  int
	Linearizable                                                    bool
	LifecycleOps                                                    int
	Violations                                                      []string
}

// AppNamePrefix starts the application_name of a run's connections; the
// rest is the seed and a random part, so that no two runs (nor anything
// else on the server) share it.
const AppNamePrefix = "idem-chaos-"

// Run runs cfg and returns its report (and an error if it could not run).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	pcfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, err
	}
	// The fault loop terminates only backends this run opened: those of its
	// own application_name whose PIDs it recorded as it connected (the
	// pool's, and the store's listener, which connects with a copy of the
	// same configuration).
	appName := fmt.Sprintf("%s%d-%08x", AppNamePrefix, cfg.Seed, rand.Uint32())
	pcfg.ConnConfig.RuntimeParams["application_name"] = appName
	var pids backends
	pcfg.ConnConfig.AfterConnect = func(_ context.Context, c *pgconn.PgConn) error {
		pids.add(c.PID())
		return nil
	}
	pcfg.MaxConns = int32(cfg.Clients + 8)
	var timeoutMs atomic.Int64 // the statement timeout the fault loop wants now (0: none)
	var connTimeouts sync.Map  // *pgx.Conn -> int64 it has
	pcfg.PrepareConn = func(ctx context.Context, c *pgx.Conn) (bool, error) {
		want := timeoutMs.Load()
		if have, ok := connTimeouts.Load(c); ok && have.(int64) == want {
			return true, nil
		}
		if _, err := c.Exec(ctx, "SET statement_timeout = "+strconv.FormatInt(want, 10)); err != nil {
			return false, nil // a dead connection: the pool drops it
		}
		connTimeouts.Store(c, want)
		return true, nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	schema := fmt.Sprintf("idem_chaos_%d", cfg.Seed)
	defer pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") //nolint:errcheck
	s, closeStore, err := cfg.NewStore(ctx, pool, schema)
	if err != nil {
		return nil, err
	}
	defer closeStore()

	p := core.PolicyDefault()
	p.LeaseDuration = 400 * time.Millisecond
	p.InFlightWait = 50 * time.Millisecond
	p.ReconcileBackoffBase = 20 * time.Millisecond
	p.ReconcileBackoffMax = 200 * time.Millisecond
	p.ReconcileAttemptsMax = 1000
	rec := linearizability.NewRecorder(s, nil)
	led := &ledger{charges: map[core.Scope][]charge{}}
	rep := &Report{}
	seen := &answers{by: map[core.Scope][]idem.Response{}}
	keys := make([]core.Scope, cfg.Keys)
	for i := range keys {
		keys[i] = core.Scope{Tenant: "chaos", Principal: "client", UseCase: "payments.create", Key: fmt.Sprintf("%d-%06d-chaos-key", cfg.Seed, i)}
	}
	fp := core.Fingerprint{7}

	// Clients: each picks keys at random and sends them through Do.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reqs, executed, replayed, errs atomic.Int64
	for c := range cfg.Clients {
		ex, err := idem.New(rec.Client(c), idem.WithPolicy(p), idem.WithHeartbeatInterval(p.LeaseDuration/4), idem.WithOutcomeTimeout(time.Second))
		if err != nil {
			return nil, err
		}
		crng := rand.New(rand.NewPCG(cfg.Seed+uint64(c), 1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				sc := keys[crng.IntN(len(keys))]
				sleep := time.Duration(crng.IntN(int(p.LeaseDuration / 2))) // some outlive a heartbeat
				if crng.IntN(10) == 0 {
					sleep = p.LeaseDuration * 3 / 2 // outlives its lease if a heartbeat fails
				}
				r, err := ex.Do(ctx, idem.Request{Scope: sc, Fingerprint: fp}, led.action(sc, sleep))
				reqs.Add(1)
				switch {
				case err != nil:
					errs.Add(1)
				case r.Kind == idem.ResultExecuted:
					executed.Add(1)
					if r.Recorded {
						seen.add(sc, r.Response)
					}
				default:
					replayed.Add(1)
					seen.add(sc, r.Response)
				}
			}
		}()
	}

	// A sweeper and a reconciler run beside the clients, as in a service.
	bg, stopBG := context.WithCancel(ctx)
	defer stopBG()
	var bgDone sync.WaitGroup
	{
		ex, _ := idem.New(rec.Client(cfg.Clients+1), idem.WithPolicy(p))
		quiet := idem.WithErrorHandler(func(error) {}) // faults make them fail; they try again
		sweeper, _ := ex.Sweeper(quiet)
		reconciler, _ := ex.Reconciler(led.check, quiet)
		bgDone.Add(2)
		go func() { defer bgDone.Done(); _ = sweeper.Run(bg, 50*time.Millisecond) }()
		go func() { defer bgDone.Done(); _ = reconciler.Run(bg, 50*time.Millisecond) }()
	}

	// The fault loop.
	faultsEnd := time.Now().Add(cfg.Faults)
	restartAt := time.Now().Add(cfg.Faults / 2)
	restarted := false
	for time.Now().Before(faultsEnd) {
		time.Sleep(time.Duration(50+rng.IntN(150)) * time.Millisecond)
		switch rng.IntN(3) {
		case 0:
			var n int
			_ = pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE application_name = $1 AND pid = ANY($2) AND pid <> pg_backend_pid() AND random() < 0.3`, appName, pids.list()).Scan(&n)
			rep.Kills += n
		case 1:
			timeoutMs.Store(int64(1 + rng.IntN(3)))
			rep.Timeouts++
		case 2:
			timeoutMs.Store(0)
		}
		if cfg.Restart && !restarted && time.Now().After(restartAt) {
			restarted = true
			if err := restartServer(); err != nil {
				return nil, fmt.Errorf("restarting the server: %w", err)
			}
			rep.Restarts++
		}
	}
	timeoutMs.Store(0)
	close(stop)
	wg.Wait()
	stopBG()
	bgDone.Wait()

	// Convergence: the sweeper and the reconciler, on a healthy store.
	ex, _ := idem.New(rec.Client(cfg.Clients), idem.WithPolicy(p))
	sweeper, _ := ex.Sweeper()
	reconciler, _ := ex.Reconciler(led.check)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _ = sweeper.RunOnce(ctx)
		_, _ = reconciler.RunOnce(ctx)
		var open int
		err := pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "idem_records"}.Sanitize()+" WHERE status IN ('in_progress', 'unknown')").Scan(&open)
		if err == nil && open == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Every key once more: each answer must be definitive and agree.
	final := map[core.Scope]idem.Response{}
	for _, sc := range keys {
		var r idem.Result
		var err error
		for range 5 { // a client retries what was not executed
			if r, err = ex.Do(ctx, idem.Request{Scope: sc, Fingerprint: fp}, led.action(sc, 0)); !errors.Is(err, idem.ErrNotExecuted) {
				break
			}
		}
		if err != nil {
			rep.Violations = append(rep.Violations, fmt.Sprintf("%s: no definitive answer after convergence: %v", sc.Key, err))
			continue
		}
		final[sc] = r.Response
	}
	rep.Requests, rep.Executed, rep.Replayed, rep.Errors = int(reqs.Load()), int(executed.Load()), int(replayed.Load()), int(errs.Load())

	// Invariants.
	for sc, cs := range led.charges {
		if len(cs) > 1 {
			rep.DoubleExecutions++
			rep.Violations = append(rep.Violations, fmt.Sprintf("%s executed %d times (tokens %v)", sc.Key, len(cs), cs))
		}
	}
	for sc, rs := range seen.by {
		for _, r := range rs {
			if f, ok := final[sc]; ok && !f.Equal(r) {
				rep.LostCompletions++
				rep.Violations = append(rep.Violations, fmt.Sprintf("%s: a client got %q, the key now replays %q", sc.Key, r.Body, f.Body))
				break
			}
		}
	}
	for sc, f := range final {
		if cs := led.charges[sc]; len(cs) == 1 && string(f.Body) != cs[0].body {
			rep.LostCompletions++
			rep.Violations = append(rep.Violations, fmt.Sprintf("%s: executed as %q, replays %q", sc.Key, cs[0].body, f.Body))
		}
	}
	_ = pool.QueryRow(ctx, "SELECT count(*) FILTER (WHERE status = 'in_progress'), count(*) FILTER (WHERE status = 'unknown') FROM "+
		pgx.Identifier{schema, "idem_records"}.Sanitize()).Scan(&rep.InProgressLeft, &rep.UnknownLeft)
	if rep.InProgressLeft+rep.UnknownLeft > 0 {
		rep.Violations = append(rep.Violations, fmt.Sprintf("%d in_progress and %d unknown left after convergence", rep.InProgressLeft, rep.UnknownLeft))
	}
	life := rec.LifecycleHistory()
	rep.LifecycleOps = len(life)
	lr := linearizability.CheckLifecycleHistory(life, p, linearizability.CheckOptions{
		ModelOptions: linearizability.ModelOptions{TimeResolution: time.Microsecond}, Timeout: time.Minute, Name: "chaospg"})
	rep.Linearizable = lr.OK()
	if !rep.Linearizable {
		rep.Violations = append(rep.Violations, "lifecycle history: "+firstLines(lr.String(), 12))
	}
	return rep, nil
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// Print writes the summary in simrun's style.
func (r *Report) Print(w io.Writer, cfg Config) {
	fmt.Fprintf(w, "chaospg: seed %d, %d clients, %d keys, faults for %v (restart: %v)\n", cfg.Seed, cfg.Clients, cfg.Keys, cfg.Faults, cfg.Restart)
	fmt.Fprintf(w, "  requests %d: executed %d, replayed %d, errors %d (fail closed under faults)\n", r.Requests, r.Executed, r.Replayed, r.Errors)
	fmt.Fprintf(w, "  faults: %d backends killed, %d tiny statement timeouts, %d restarts\n", r.Kills, r.Timeouts, r.Restarts)
	fmt.Fprintf(w, "  double executions      %d\n", r.DoubleExecutions)
	fmt.Fprintf(w, "  lost completions       %d\n", r.LostCompletions)
	fmt.Fprintf(w, "  in_progress left       %d (unknown left %d)\n", r.InProgressLeft, r.UnknownLeft)
	fmt.Fprintf(w, "  lifecycle history      %d operations, linearizable: %v\n", r.LifecycleOps, r.Linearizable)
	if len(r.Violations) == 0 {
		fmt.Fprintln(w, "  OK: 0 violations")
		return
	}
	fmt.Fprintf(w, "  FAIL: %d violations\n", len(r.Violations))
	for i, v := range r.Violations {
		if i == 10 {
			fmt.Fprintf(w, "    ... %d more\n", len(r.Violations)-10)
			break
		}
		fmt.Fprintln(w, "    "+v)
	}
}

// ledger is the fake downstream: it charges once per call, keyed by scope
// and attempt token, and is what the reconciler's check reads.
type ledger struct {
	mu      sync.Mutex
	charges map[core.Scope][]charge
}

type charge struct {
	token core.Token
	body  string
}

func (l *ledger) action(sc core.Scope, sleep time.Duration) idem.Action {
	return func(ctx context.Context, at idem.Attempt) (idem.Response, error) {
		body := fmt.Sprintf(`{"charge":"%s","token":%d}`, sc.Key, at.Token)
		l.mu.Lock()
		if !time.Now().Before(at.LockedUntil) {
			// The downstream enforces the attempt's lease as a deadline
			// (see idem.Check): what lets the check answer not executed.
			l.mu.Unlock()
			return idem.Response{}, &idem.NotExecutedError{Code: "deadline_passed"}
		}
		l.charges[sc] = append(l.charges[sc], charge{at.Token, body})
		l.mu.Unlock()
		if sleep > 0 {
			time.Sleep(sleep)
		}
		return idem.Response{StatusCode: 201, Body: []byte(body)}, nil
	}
}

// check tells the reconciler the truth: the action charges before anything
// else, so an attempt without a charge never executed.
func (l *ledger) check(_ context.Context, rec idem.Record) (idem.Finding, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.charges[rec.Scope] {
		if c.token == rec.Token {
			return idem.Finding{Verdict: core.VerdictExecuted, Response: idem.Response{StatusCode: 201, Body: []byte(c.body)}}, nil
		}
	}
	if time.Now().Before(rec.LockedUntil) {
		return idem.Finding{Verdict: core.VerdictStillUnknown}, nil // the attempt may still charge
	}
	return idem.Finding{Verdict: core.VerdictNotExecuted}, nil
}

type answers struct {
	mu sync.Mutex
	by map[core.Scope][]idem.Response
}

func (a *answers) add(sc core.Scope, r idem.Response) {
	a.mu.Lock()
	a.by[sc] = append(a.by[sc], r.Clone())
	a.mu.Unlock()
}

// backends are the PIDs of the connections a run opened.
type backends struct {
	mu   sync.Mutex
	pids []int32
}

func (b *backends) add(pid uint32) {
	b.mu.Lock()
	b.pids = append(b.pids, int32(pid))
	b.mu.Unlock()
}

func (b *backends) list() []int32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int32(nil), b.pids...)
}

func restartServer() error {
	out, err := exec.Command("bash", "-c", `pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main restart`).CombinedOutput()
	if err != nil {
		return errors.New(strings.TrimSpace(string(out)) + ": " + err.Error())
	}
	return nil
}
