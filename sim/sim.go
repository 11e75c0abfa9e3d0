package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	memstore "github.com/idemkit/idem/store/mem"
)

// world is one run.
type world struct {
	clock
	cfg      Config
	rates    [faultCount]float64
	rng      rngs
	healed   bool
	healAt   int64
	giveUpAt int64 // healAt plus convergeBound
	stopped  bool  // a checker found a violation

	policy  core.Policy
	mem     *memstore.Store
	store   *faultyStore
	metrics *counters
	ex      *idem.Executor

	sweepActor, reconcileActor *workerActor
	// sweepMeta and reconcileMeta name the workers behind their store calls.
	sweepMeta, reconcileMeta opMeta
	// fastPath: this seed's servers and workers go through the memory
	// store's single-lock Apply (what production Do takes over it), not
	// load and compare-and-set (Config.StorePath).
	fastPath bool
	// step is the core every store call steps through: Config.Step, with
	// the checker watching each transition (observeStep).
	step       core.StepFunc
	storeClock storeClock // the store's clock: its grain and how far it is behind the world's
	// liveClock is the store's clock in a live run (RunLive), real time;
	// nil on virtual time.
	liveClock func() time.Time
	// shadow is every scope's record as the store's applied writes left it:
	// the checkers read it, so that watching the store never changes it (a
	// Load would hand out a fresh token).
	shadow []core.Record

	servers  []*server
	clients  []*client
	requests []*request
	scopes   []core.Scope
	scopeIdx map[string]int32 // by key: see scopeIndex
	gateway  gateway
	payloads payloadSpace // the seed's payload vocabulary and fingerprint specs
	waiters  [][]*waiter  // by scope: the servers waiting for its record to change

	pools pools // what server calls reuse (pools.go)
	slabs slabs // where requests, attempts and server calls are made (spare.go)
	// rendered is where a client writes a payload out, before it is copied
	// to the request's own bytes.
	rendered []byte
	check    checker
	recount  counterRecount // the servers' counters, as the checker recounts them from what the servers heard
	plant    plantedBugs    // set only by the tests that show a checker catches them
	tracing  bool           // keep every event (else a violation is traced by running its seed again)
	events   []TraceEvent
	lin      []linearizability.StoreOperation     // the store's history, with LinCheck
	linLife  []linearizability.LifecycleOperation // the same on the fast path: one Apply each
	report   Report

	scopeLast int32 // the index scopeIndex found last
}

// Run runs one simulation and returns its report, with the trace of every
// event. It never panics on a valid config; an invalid one is an error.
func Run(cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return run(cfg, true), nil
}

// run runs cfg. Without tracing it keeps no events, which is faster; a run
// that breaks an invariant is run again with tracing, so that its report
// holds the events of the violating scope. The same seed gives the same run.
func run(cfg Config, tracing bool) *Report { return runFrom(cfg, tracing, nil) }

// runFrom is run with the memory of the world run last on this goroutine
// (nil: none), which it leaves the next one in turn. Its report holds no
// trace: the scopes it would name are in the memory handed on.
func runFrom(cfg Config, tracing bool, sp *spare) *Report {
	w := newWorldFrom(cfg, tracing, sp)
	w.start()
	w.loop()
	w.finish()
	if len(w.report.Violations) > 0 && !tracing {
		return run(cfg, true)
	}
	r := w.report // a copy: a pointer into w would keep the whole world alive
	if sp != nil {
		r.Events, r.Scopes = nil, nil
		sp.keep(w)
	}
	return &r
}

func newWorld(cfg Config, tracing bool) *world { return newWorldFrom(cfg, tracing, nil) }

// newWorldFrom makes the world of cfg's seed, in the memory sp holds (nil:
// all of it new).
func newWorldFrom(cfg Config, tracing bool, sp *spare) *world {
	w := &world{cfg: cfg, rng: newRngs(cfg.Seed), policy: cfg.Lifecycle, metrics: &counters{}, tracing: tracing}
	sp.give(w)
	if cfg.DrawLifecycle {
		w.policy = drawLifecycle(cfg.Lifecycle, w.rng.policy)
		w.cfg.Lifecycle = w.policy // the seed's report says which it drew
	}
	w.rates = cfg.rates(w.rng.swarm)
	w.fixedDelays(int64(cfg.ClientTimeout), int64(cfg.GatewayTimeout), int64(w.policy.LeaseDuration/3), int64(cfg.ReconcileEvery), int64(cfg.SweepEvery))
	w.storeClock.draw(w.rng.clock, &w.policy)
	w.step = w.observeStep(cfg.Step)
	w.mem = memstore.New(memstore.Options{Clock: w.storeTime, Shards: 8, Deterministic: true, Step: w.step})
	w.store = &faultyStore{w: w, inner: w.mem}
	w.fastPath = cfg.fastPath(w.rng.path)
	// One executor per actor kind, each over the store as that actor sees
	// it, so that every store call is attributed explicitly. The servers'
	// executor only begins Flows: the servers make their store calls
	// themselves, through their own views.
	w.ex = w.executor(nil)
	w.newWorkerActors()
	// Scopes are made only by new requests: at most cfg.Requests of them,
	// so per-scope state is sized once.
	w.scopeIdx = cleared(w.scopeIdx, cfg.Requests)
	if cap(w.shadow) < cfg.Requests {
		w.shadow = make([]core.Record, 0, cfg.Requests)
	}
	w.waiters = sized(w.waiters, cfg.Requests)
	w.gateway.init(cfg.Requests)
	w.payloads.init(w.rng.payload)
	w.check.init(w)
	w.report.init(w)
	return w
}

// plantedBugs are bugs the checker tests plant in a run, to show that each
// checker catches what it is for. No Config reaches them.
type plantedBugs struct {
	corruptReplays bool // a server replays a response one byte off (invariant 2)
	neverReconcile bool // the reconciler never finds the truth (invariant 5)
	clientsGiveUp  bool // clients do not retry after a failure (invariant 6)
	// fingerprintOneUseCase: servers fingerprint every payload with the
	// spec of the first use case (invariant 3, domain separation).
	fingerprintOneUseCase bool
}

// fault reports whether f fires now, drawing from r. Faults fire only in the
// fault phase.
func (w *world) fault(f Fault, r *rand.Rand) bool {
	rate := w.rates[f]
	return rate > 0 && !w.healed && r.Float64() < rate
}

// log records a trace event at the current time.
func (w *world) log(e TraceEvent) {
	if !w.tracing {
		return
	}
	e.At = w.now
	w.events = append(w.events, e)
}

func (w *world) scopeOf(s core.Scope) int32 {
	if i, ok := w.scopeIndex(s); ok {
		return i
	}
	i := int32(len(w.scopes))
	w.scopes = append(w.scopes, s)
	w.shadow = append(w.shadow, core.Record{Scope: s})
	w.scopeIdx[s.Key] = i
	return i
}

// scopeNumber is the index of scope s, or -1 when the world did not make it.
func (w *world) scopeNumber(s core.Scope) int32 {
	if i, ok := w.scopeIndex(s); ok {
		return i
	}
	return -1
}

// scopeIndex is the index of scope s, if the world made it. The index is
// kept by key alone, which names one scope in a run (keys are random, and a
// buggy client reuses a whole scope), and the scope is then compared whole:
// hashing one string instead of four is a tenth of the checkers' time.
//
// The scope found last is tried first: one store call asks about its scope
// several times (the call, its checks, the write, the waiters), and a
// compare of strings that share their bytes is cheaper than a hash.
func (w *world) scopeIndex(s core.Scope) (int32, bool) {
	if i := w.scopeLast; int(i) < len(w.scopes) && w.scopes[i] == s {
		return i, true
	}
	i, ok := w.scopeIdx[s.Key]
	if !ok || w.scopes[i] != s {
		return 0, false
	}
	w.scopeLast = i
	return i, true
}

func (w *world) start() {
	for i := range w.cfg.Servers {
		w.servers = append(w.servers, &server{w: w, id: int32(i), alive: true})
		w.reconfigure()
	}
	for i := range w.cfg.Clients {
		buggy := w.rates[FaultKeyMisuse] > 0 && w.rng.clients.Float64() < buggyShare
		version := uint8(w.rng.payload.IntN(len(schemaVersions)))
		w.clients = append(w.clients, &client{w: w, id: int32(i), principal: fmt.Sprintf("client-%d", i), buggy: buggy, version: version})
	}
	// Requests go round the clients and start at random times in the
	// arrival window.
	ats, arrivals := make([]int64, w.cfg.Requests), make([]event, w.cfg.Requests)
	for i := range arrivals {
		ats[i] = w.rng.clients.Int64N(int64(w.cfg.Arrival))
		arrivals[i] = event{h: w.clients[i%len(w.clients)], kind: evArrival}
	}
	w.scheduleAll(ats, arrivals)
	w.after(int64(w.cfg.Arrival), w.heal)
	w.afterH(int64(w.cfg.ReconcileEvery), w.reconcileActor, evWorkerTick)
	w.afterH(w.sweepActor.every, w.sweepActor, evWorkerTick)
}

// convergeBound is how long after healing the run waits for convergence:
// past it, anything unsettled breaks invariant 5 or 6. Leases, backoffs,
// timeouts and worker ticks, plus two terms for what is left to drain:
// load (the arrivals come in a fixed window and the workers take a fixed
// batch a tick, so above the default 200 requests a seed the backlog they
// drain after healing grows with the requests; at 1,000 a seed, 4 seeds in
// 10,000 took 54-60 s to settle, past the 53 s of the fixed terms), and
// the records in progress or unknown as the faults stop, each of which the
// reconciler must look at (its Checks are slow on some seeds: a tenth of
// them take 0.3 to 1.5 s): a seed whose servers were paused most of the
// time leaves nearly every key to it (BENCHMARKS.md, sim-long).
func (w *world) convergeBound() int64 {
	p := &w.policy
	load := time.Duration(max(0, w.cfg.Requests-defaultRequests)) * 50 * time.Millisecond
	backlog := 0
	for i := range w.shadow {
		if s := w.shadow[i].Status; s == core.StatusInProgress || s == core.StatusUnknown {
			backlog++
		}
	}
	return int64(3*p.LeaseDuration + 10*p.ReconcileBackoffMax + 10*w.cfg.ClientBackoffMax + 4*w.cfg.ClientTimeout + 20*w.cfg.ReconcileEvery +
		load + time.Duration(backlog)*150*time.Millisecond)
}

func (w *world) loop() {
	for w.pending() > 0 && !w.stopped {
		e := w.next()
		if e.srv != nil {
			e.srv.runEvent(e)
		} else {
			e.fire()
		}
		if w.healed && w.now > w.giveUpAt {
			return
		}
	}
}

func (w *world) heal() {
	w.healed = true
	w.healAt = w.now
	w.giveUpAt = w.now + w.convergeBound()
	w.log(TraceEvent{Scope: -1, Actor: ActorWorld, What: WhatHeal})
}

// settled reports whether the run is over: faults stopped, every request has
// its answer, and no record is in progress or unknown.
func (w *world) settled() bool {
	if !w.healed || w.report.Done < len(w.requests) || len(w.requests) < w.cfg.Requests {
		return false
	}
	for i := range w.shadow {
		if st := w.shadow[i].Status; st == core.StatusInProgress || st == core.StatusUnknown {
			return false
		}
	}
	return true
}

// executor builds an executor over the store as the caller meta sees it
// (nil: a view nobody calls through, for the servers' Flows).
func (w *world) executor(meta *opMeta) *idem.Executor {
	if meta == nil {
		meta = &opMeta{scope: -1}
	}
	ex, err := idem.New(w.store.view(meta), idem.WithPolicy(w.policy), idem.WithMetrics(w.metrics))
	if err != nil {
		panic(err) // unreachable: the policy was validated
	}
	return ex
}

// reconcileCheck is the reconciler's look at the truth: the gateway's
// ledger. An attempt can still land a charge until its lease end (the
// deadline it passed to the gateway), so before then it is still unknown.
func (w *world) reconcileCheck(_ context.Context, rec idem.Record) (idem.Finding, error) {
	if w.plant.neverReconcile {
		return idem.Finding{Verdict: core.VerdictStillUnknown}, nil
	}
	if w.fault(FaultCheckBad, w.rng.gateway) {
		how := w.rng.gateway.IntN(len(checkBadNames))
		w.log(TraceEvent{Scope: w.scopeNumber(rec.Scope), Actor: ActorReconciler, What: WhatCheck, Token: rec.Token, Arg: int64(how)})
		if how == checkBadPanic {
			panic(errCheckPanicked)
		}
		return badFinding(how)
	}
	if ch := w.gateway.find(attemptID{w.scopeNumber(rec.Scope), rec.Token}); ch != nil {
		return idem.Finding{Verdict: core.VerdictExecuted, Response: ch.response()}, nil
	}
	if w.Time().Before(rec.LockedUntil) {
		return idem.Finding{Verdict: core.VerdictStillUnknown}, nil
	}
	return idem.Finding{Verdict: core.VerdictNotExecuted}, nil
}

// applied hears every write the store applied for the caller m, before any
// fault hides it.
func (w *world) applied(m *opMeta, rec *core.Record, kind core.WriteKind, expectToken core.Token) {
	scope, ok := w.scopeIndex(rec.Scope)
	if !ok {
		scope = -1
		w.check.written(scope, rec) // a scope no request has: a bad key's, say
	} else {
		prev := w.shadow[scope]
		if kind == core.WriteDelete {
			w.shadow[scope] = core.Record{Scope: rec.Scope}
		} else {
			w.shadow[scope] = *rec
			// The shadow keeps its own copy: the writer may reuse its buffer.
			w.shadow[scope].Response = copyResponseIn(&w.slabs, rec.Response)
		}
		w.check.write(*m, scope, &prev, &w.shadow[scope], kind, expectToken)
	}
	w.log(TraceEvent{Scope: m.scope, Actor: ActorStore, What: WhatWrite, Token: rec.Token, Arg: int64(kind), Arg2: int64(rec.Status)})
	if scope >= 0 {
		w.wakeWaiters(scope, rec)
	}
}

// finish runs the end-of-run checks and fills the report.
func (w *world) finish() {
	w.sweepActor.end()
	w.reconcileActor.end()
	if !w.stopped || w.report.Converged {
		w.check.final()
	}
	if w.cfg.Baseline == BaselineCorrect && len(w.report.Violations) == 0 {
		w.recount.compare(&w.check, w.metrics.servers, serverCounters)
	}
	if w.cfg.LinCheck && len(w.report.Violations) == 0 {
		w.check.linearizable(w.lin, w.linLife)
	}
	w.report.finish(w)
}

// counters is the simulator's idem.Metrics: totals only, without the
// per-label maps of idem.MetricsMem, which it does not need, and of them the
// workers' part (their events, sweep and resolve), so that the servers' can
// be held to what the servers heard (check_metrics.go).
type counters struct {
	total, workers [16]uint64
}

// workerEvents are the Event labels of the sweeper's and the reconciler's counts.
var workerEvents = [...]string{core.EventSweep.String(), core.EventResolve.String()}

func (c *counters) Add(k idem.Counter, l idem.Labels, n uint64) {
	if int(k) >= len(c.total) {
		return
	}
	c.total[k] += n
	if l.Event == workerEvents[0] || l.Event == workerEvents[1] {
		c.workers[k] += n
	}
}

func (c *counters) Total(k idem.Counter) uint64 {
	if int(k) < len(c.total) {
		return c.total[k]
	}
	return 0
}

// servers is k's count less the workers'.
func (c *counters) servers(k idem.Counter) uint64 {
	if int(k) < len(c.total) {
		return c.total[k] - c.workers[k]
	}
	return 0
}

func (w *world) String() string {
	return fmt.Sprintf("seed %d at %v", w.cfg.Seed, time.Duration(w.now))
}

// The ways FaultCheckBad makes the reconciler's Check go wrong: none of
// them may settle a record, and none may stop the reconciler.
var checkBadNames = [...]string{"error", "no verdict", "executed without a response", "executed with an injected header", "executed with a 1xx status", "executed with a header value that splits the response", "panic"}

// checkBadPanic is the bad check that panics (a nil map in the ledger's
// client, say): the reconciler must recover it and reschedule the record.
const checkBadPanic = 6

func badFinding(how int) (idem.Finding, error) {
	switch how {
	case 0:
		return idem.Finding{}, errCheckFailed
	case 1:
		return idem.Finding{}, nil
	case 2:
		return idem.Finding{Verdict: core.VerdictExecuted}, nil
	case 3:
		return idem.Finding{Verdict: core.VerdictExecuted, Response: core.Response{StatusCode: 201, Headers: []core.Header{{Name: "X-A\r\nSet-Cookie", Value: "a=b"}}}}, nil
	case 5:
		return idem.Finding{Verdict: core.VerdictExecuted, Response: core.Response{StatusCode: 201, Headers: []core.Header{splittingHeader}}}, nil
	}
	return idem.Finding{Verdict: core.VerdictExecuted, Response: core.Response{StatusCode: 102}}, nil
}

var (
	errCheckFailed   = errors.New("sim: the ledger did not answer")
	errCheckPanicked = errors.New("sim: the ledger's client panicked")
)
