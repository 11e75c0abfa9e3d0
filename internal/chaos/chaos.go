// Package chaos is what the chaos harnesses of the stores share
// (store/pgx's chaospg, store/redis's chaosredis): retrying clients that
// send payments through the real executor over a store while a store's own
// fault loop (a Target) breaks it, a sweeper and a reconciler beside them,
// then convergence once the faults are lifted, and the invariants of SPEC
// §6 checked against a ledger of what the downstream charged and against
// the history of every store call. It also measures what a store lost:
// every acknowledged write that a later call no longer saw.
package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	"github.com/idemkit/idem/store"
)

// Config is one run.
type Config struct {
	Name    string // the command's, in the report and the checker's
	Clients int    // concurrent clients, each retrying (16-32)
	Keys    int    // distinct keys the clients share at a time
	Seed    uint64
	// Slide, when positive, moves the keys the clients share on by one
	// every Slide answers (executed or replayed), so that new payments (new
	// keys, and with them writes) keep coming for the whole run, each
	// retried while it is among the latest Keys (Slide answers a key, on
	// average). Zero keeps the same Keys for the whole run.
	Slide int
	// Backoff is how long a client waits after an error before it sends
	// again (zero: at once).
	Backoff time.Duration
	// MayLose is what the store's documented durability lets a crash lose
	// (LosesNothing, the zero value, for a store that keeps what it
	// acknowledged). A loss it allows, when a crash happened while it could,
	// is measured and reported, and so is what follows from it on its key;
	// any other loss is a violation.
	MayLose Loses
}

// Loses is what a crash may lose, by a store's documentation.
type Loses uint8

const (
	// LosesNothing: nothing a call was told (PostgreSQL).
	LosesNothing Loses = iota
	// LosesReads: a write a reader was shown before it was acknowledged to
	// its writer (a replay, an answer in flight). Its key's history is then
	// not linearizable, which is not checked; every other invariant is
	// (Redis with ReplicasWait: a read waits for no replica).
	LosesReads
	// LosesWrites: acknowledged writes as well, and with them at most once
	// on their keys: a second execution, an answer the key no longer
	// replays (Redis without ReplicasWait).
	LosesWrites
)

func (l Loses) String() string {
	switch l {
	case LosesNothing:
		return "nothing"
	case LosesReads:
		return "reads"
	case LosesWrites:
		return "writes"
	}
	return "loses(" + strconv.Itoa(int(l)) + ")"
}

// Target is a store's part of a run: the faults and what the store alone
// can count.
type Target interface {
	// Faults runs the fault loop for the run's fault time, and returns once
	// the faults are lifted and the store serves again. It kills a server
	// (a crash that may lose acknowledged writes) through crash, which
	// notes when, so that a lost write can be traced to a crash.
	Faults(ctx context.Context, crash func(kill func())) error
	// Open counts the records left in progress and unknown among the run's
	// keys.
	Open(ctx context.Context, keys []core.Scope) (inProgress, unknown int, err error)
}

// Run runs the clients over s while t's faults last, converges, and
// checks.
func Run(ctx context.Context, cfg Config, s store.Store, t Target) (*Report, error) {
	if cfg.Clients < 1 || cfg.Keys < 1 || cfg.Slide < 0 || cfg.Backoff < 0 {
		return nil, fmt.Errorf("chaos: %d clients and %d keys (at least one each), slide %d and backoff %v (not negative)", cfg.Clients, cfg.Keys, cfg.Slide, cfg.Backoff)
	}
	start := time.Now()
	r := &run{cfg: cfg, t: t, p: policy(), rep: &Report{}, clock: func() int64 { return int64(time.Since(start)) }}
	r.rec = linearizability.NewRecorder(s, r.clock)
	r.led = &ledger{charges: map[core.Scope][]charge{}}
	r.seen = &answers{by: map[core.Scope][]idem.Response{}}
	r.keys = keys(cfg.Seed, cfg.Keys)

	if err := r.underFaults(ctx); err != nil {
		return nil, err
	}
	// The faults are over: one executor converges the records, on a
	// healthy store, then asks every key once more.
	ex, _ := idem.New(r.rec.Client(cfg.Clients), idem.WithPolicy(r.p))
	r.converge(ctx, ex)
	final := r.finalAnswers(ctx, ex)
	r.rep.Requests, r.rep.Executed, r.rep.Replayed, r.rep.Errors = int(r.reqs.Load()), int(r.executed.Load()), int(r.replayed.Load()), int(r.errs.Load())
	r.rep.KeysUsed = len(r.keys)
	r.check(ctx, final)
	return r.rep, nil
}

// run is what the steps of one Run share.
type run struct {
	cfg   Config
	t     Target
	p     core.Policy
	clock func() int64              // nanoseconds since the run began: the history's, and the crashes'
	rec   *linearizability.Recorder // records every store call, the clients' and the workers', for the lifecycle history
	led   *ledger
	seen  *answers     // what the clients got, key by key
	keys  []core.Scope // the keys the clients used (with Slide, complete once they are stopped)
	rep   *Report

	crashMu sync.Mutex
	crashes []span // when the target crashed a server, on clock

	reqs, executed, replayed, errs atomic.Int64 // the clients' requests, by how they ended
}

// policy is the default with leases, waits and backoffs short enough that a
// run of seconds sees many leases end and many records reconciled. Its TTL
// (a day) outlives any run: no record is deleted, so that a record's
// versions only grow (what finds a lost write relies on it).
func policy() core.Policy {
	p := core.PolicyDefault()
	p.LeaseDuration = 400 * time.Millisecond
	p.InFlightWait = 50 * time.Millisecond
	p.ReconcileBackoffBase = 20 * time.Millisecond
	p.ReconcileBackoffMax = 200 * time.Millisecond
	p.ReconcileAttemptsMax = 1000
	return p
}

// keys are the first n scopes of the run, named after the seed.
func keys(seed uint64, n int) []core.Scope {
	scopes := make([]core.Scope, n)
	for i := range scopes {
		scopes[i] = scopeOf(seed, i)
	}
	return scopes
}

func scopeOf(seed uint64, i int) core.Scope {
	return core.Scope{Tenant: "chaos", Principal: "client", UseCase: "payments.create", Key: fmt.Sprintf("%d-%06d-chaos-key", seed, i)}
}

// pick is the key of a client's next request: one of the Keys the clients
// share now.
func (r *run) pick(rng *rand.Rand) core.Scope {
	if r.cfg.Slide <= 0 {
		return r.keys[rng.IntN(len(r.keys))]
	}
	return scopeOf(r.cfg.Seed, r.slid()+rng.IntN(r.cfg.Keys))
}

// slid is how many keys the window has moved on by.
func (r *run) slid() int {
	if r.cfg.Slide <= 0 {
		return 0
	}
	return int(r.executed.Load()+r.replayed.Load()) / r.cfg.Slide
}

// fingerprint is every request's: the clients race on a key, they never
// send it two different requests.
var fingerprint = core.Fingerprint{7}

// underFaults runs the clients, a sweeper and a reconciler while the
// target's fault loop runs, then stops them all.
func (r *run) underFaults(ctx context.Context) error {
	stopClients, err := r.startClients(ctx)
	if err != nil {
		return err
	}
	stopBackground := r.startBackground(ctx)
	err = r.t.Faults(ctx, r.crash)
	stopClients()
	stopBackground()
	r.keys = keys(r.cfg.Seed, r.slid()+r.cfg.Keys) // every key a client may have sent
	return err
}

// crash kills a server by kill and notes when: from just before to just
// after.
func (r *run) crash(kill func()) {
	c := span{from: r.clock()}
	kill()
	c.to = r.clock()
	r.crashMu.Lock()
	r.crashes = append(r.crashes, c)
	r.crashMu.Unlock()
}
