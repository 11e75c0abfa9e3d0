package sim

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// LiveScale divides every duration of a Config for RunLive: a virtual lease
// of 2 s is 100 ms of real time.
const LiveScale = 20

// RunLive runs cfg's workload in real time through the executor's own Do
// (its heartbeat timer, its lease-loss cancellation, its detached
// completion, its in-flight wait), with goroutines for clients (bounded:
// cfg.Clients of them, each with its requests one after the other, and a
// duplicate send as a second goroutine) and the real Sweeper and Reconciler
// running beside them, over the memory store behind the simulator's store
// faults, and holds it to the simulator's checkers. Durations are cfg's
// divided by LiveScale. A run is not reproducible by its seed, as the
// goroutines interleave as the scheduler decides: the seed draws the faults,
// the policy and the workload.
func RunLive(cfg Config) (*Report, error) { return RunLiveOn(cfg, nil) }

// RunLiveOn is RunLive over the store open returns for the seed (nil: the
// memory store), on the store's own clock (see shiftedStore). The store's
// latency is its own, on top of the simulated one.
func RunLiveOn(cfg Config, open OpenLiveStore) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	scaled := cfg.scaled(LiveScale)
	l := newLive(scaled)
	if open != nil {
		s, closeStore, err := open(cfg.Seed)
		if err != nil {
			return nil, fmt.Errorf("sim: live store: %w", err)
		}
		defer closeStore()
		shifted, err := newShiftedStore(s, l.now)
		if err != nil {
			return nil, fmt.Errorf("sim: live store: %w", err)
		}
		l.w.store.inner = shifted
	}
	l.run()
	return &l.w.report, nil
}

// scaled is c with the world's durations divided by k; the lifecycle
// policy's are divided once the seed has drawn it (scaledPolicy).
func (c Config) scaled(k time.Duration) Config {
	d := func(v *time.Duration) { *v /= k }
	for _, v := range []*time.Duration{&c.Arrival, &c.NetLatencyMin, &c.NetLatencyMax, &c.StoreLatencyMin, &c.StoreLatencyMax,
		&c.GatewayLatencyMin, &c.GatewayLatencyMax, &c.GatewayTimeout, &c.ClientTimeout, &c.ClientBackoffBase, &c.ClientBackoffMax,
		&c.ReconcileEvery, &c.SweepEvery} {
		d(v)
	}
	return c
}

// live is one RunLive: the simulator's world (its random sources, faulty
// store, gateway and checkers), used from many goroutines under one lock,
// on real time.
type live struct {
	mu      sync.Mutex // guards w, recount and every liveCall's state
	w       *world
	start   time.Time
	metrics *lockedMetrics
	recount counterRecount // the counters as the checker recounts them (check_metrics.go)
	played  liveSchedules  // how often the Do schedules played out, for the tests
	// The sweeper's and the reconciler's callers, for their store views.
	sweepMeta, reconcileMeta opMeta
	// scheduleRate is liveScheduleRate, or more for the tests.
	scheduleRate float64
	plant        livePlants // set only by the tests that show a checker catches them
	lag          hostLag    // the host's stalls, which widen the real-time bounds (live_lag.go)
	// giveUpAfter is when, from the start, the run gives up converging
	// unless the host stalled (inTime); set before the clients start.
	giveUpAfter time.Duration
	// convergeAfter is the bound a request is given from its arrival, and
	// lastArrival when, from the start, a client last made one. A client
	// sends its requests one after the other: on a busy host one slow
	// request delays the next past the run's bound, which then found it
	// never sent (no answer, 0 attempts; TestLive under load). A late
	// arrival has a bound of its own.
	convergeAfter time.Duration
	lastArrival   atomic.Int64
}

// livePlants are bugs the live checker tests plant in a run, each where
// the executor (or its host) could have it, to show that a checker catches
// it. No Config reaches them.
type livePlants struct {
	corruptReplays     bool // a replay one byte off (invariant 2)
	leaseLossUntold    bool // the action's context is the caller's: a lost lease never cancels it
	zombieOwnUnknown   bool // zombie_key also counts an owner's MarkUnknown
	swapInFlight       bool // the in-flight answer is the other status than the policy's
	emptySuccess       bool // a store failure answered as an empty success
	outcomeOnCallerCtx bool // the outcome written on the caller's context
}

func newLive(cfg Config) *live {
	l := &live{start: time.Now(), scheduleRate: liveScheduleRate}
	w := newWorld(cfg, false)
	w.policy = scaledPolicy(w.policy, LiveScale)
	w.cfg.Lifecycle, w.report.Config.Lifecycle = w.policy, w.policy
	w.mem = memstore.New(memstore.Options{Clock: l.now, Shards: 8})
	w.liveClock = l.now
	w.store = &faultyStore{w: w, inner: w.mem}
	l.w = w
	l.metrics = &lockedMetrics{l: l}
	return l
}

// scaledPolicy is p with its times divided by k (at least a millisecond).
func scaledPolicy(p core.Policy, k time.Duration) core.Policy {
	for _, v := range []*time.Duration{&p.LeaseDuration, &p.InFlightWait, &p.RetryAfter, &p.ReconcileBackoffBase, &p.ReconcileBackoffMax, &p.TTL, &p.TombstoneRetention} {
		*v = max(*v/k, time.Millisecond)
	}
	return p
}

// now is the store's clock, and the world's: real time since the start,
// from the simulator's epoch.
func (l *live) now() time.Time { return epoch.Add(time.Since(l.start)) }

// lock takes the world for the caller, its clock set to now.
func (l *live) lock() *world {
	l.mu.Lock()
	l.w.now = int64(time.Since(l.start))
	return l.w
}

func (l *live) unlock() { l.mu.Unlock() }

// lockedMetrics counts into the world's counters under its lock.
type lockedMetrics struct{ l *live }

func (m *lockedMetrics) Add(c idem.Counter, lb idem.Labels, n uint64) {
	m.l.mu.Lock()
	m.l.w.metrics.Add(c, lb, n)
	if m.l.plant.zombieOwnUnknown && c == idem.CounterReconcileScheduled && lb.Event == core.EventMarkUnknown.String() {
		m.l.w.metrics.Add(idem.CounterZombieKey, lb, n)
	}
	m.l.mu.Unlock()
}

// view is the faulty store for a caller (meta names it; call is the Do it
// serves, nil for a worker). Every call takes the world's lock for the
// instant it applies, and the caller waits out the store's latency after
// it, outside the lock. It is always a store.Applier, so that every event
// the caller applies, and what the caller heard of it, passes through
// liveView.Apply: on the seeds of the compare-and-set path, its Apply is
// the load-step-write loop over the methods.
func (l *live) view(meta *opMeta, call *liveCall) store.Store {
	inner := l.w.store.view(meta)
	v := liveView{liveStore: liveStore{l: l, inner: inner}, call: call}
	if a, ok := inner.(store.Applier); ok {
		v.fast = a
	}
	return v
}

type liveStore struct {
	l     *live
	inner store.Store
	// locked, when set, runs under the lock just before each call: an
	// Apply's way to name its event to the view (opMeta) in the same
	// instant as each store call it makes. The Do's main path and its
	// heartbeat share one opMeta, so an event named earlier (injectDo)
	// may be the other's by the time a write of the compare-and-set path,
	// which carries no event, is attributed.
	locked func()
}

// call makes do under the lock and sleeps the store's latency after it.
func (s liveStore) call(do func()) {
	w := s.l.lock()
	lat := w.storeLatency()
	if s.locked != nil {
		s.locked()
	}
	do()
	s.l.unlock()
	time.Sleep(time.Duration(lat))
}

func (s liveStore) Load(ctx context.Context, scope core.Scope) (snap store.Snapshot, err error) {
	s.call(func() { snap, err = s.inner.Load(ctx, scope) })
	return snap, err
}

func (s liveStore) Insert(ctx context.Context, rec *core.Record) (err error) {
	s.call(func() { err = s.inner.Insert(ctx, rec) })
	return err
}

func (s liveStore) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, t core.Token) (err error) {
	s.call(func() { err = s.inner.CompareAndSet(ctx, rec, v, t) })
	return err
}

func (s liveStore) Delete(ctx context.Context, scope core.Scope, v uint64, t core.Token) (err error) {
	s.call(func() { err = s.inner.Delete(ctx, scope, v, t) })
	return err
}

func (s liveStore) Due(ctx context.Context, kind store.DueKind, limit int) (recs []core.Record, err error) {
	s.call(func() { recs, err = s.inner.Due(ctx, kind, limit) })
	return recs, err
}

// StepFunc is the core the seed steps events with (Config.Step), for the
// load-step-write path (store.Stepper).
func (s liveStore) StepFunc() core.StepFunc { return s.l.w.cfg.Step }

func (s liveStore) Wait(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	return s.inner.Wait(ctx, scope, v, t) // blocks: never under the lock
}

// liveView is a caller's store: liveStore's methods, and an Apply through
// which every event passes, with the Do schedules' store faults before it
// (injectDo) and the checkers after it (heard).
type liveView struct {
	liveStore
	fast store.Applier // the memory store's fast path, on the seeds that take it
	call *liveCall
}

func (v liveView) Apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) (err error) {
	sent := v.l.now() // as the executor reckons a lease it grants: from the send
	if v.call != nil && v.call.injectDo(ev) {
		return &store.Error{Method: store.MethodApply, Err: errStoreDown}
	}
	if v.call != nil && v.l.plant.outcomeOnCallerCtx && v.call.hasActed() {
		ctx = v.call.ctx
	}
	ls := v.liveStore
	if c := v.call; c != nil {
		ls.locked = func() { c.meta.event, c.meta.attempt = ev.Kind, c.token }
	}
	if v.fast != nil {
		ls.call(func() { err = v.fast.Apply(ctx, scope, ev, p, out) })
	} else {
		err = store.Apply(ctx, ls, scope, ev, p, out) // liveStore is no Applier: load, step, write
	}
	v.l.heard(v.call, ev, out, err, sent)
	return err
}

// run sends every request, with the workers beside the clients, then stops
// the faults and waits for everything to converge, and checks.
func (l *live) run() {
	w := l.lock()
	cfg := w.cfg
	for i := range cfg.Clients {
		w.clients = append(w.clients, &client{w: w, id: int32(i), principal: "client-" + strconv.Itoa(i), buggy: w.rates[FaultKeyMisuse] > 0 && w.rng.clients.Float64() < buggyShare})
	}
	starts := make([][]time.Duration, cfg.Clients)
	for i := range cfg.Requests {
		starts[i%cfg.Clients] = append(starts[i%cfg.Clients], time.Duration(w.rng.clients.Int64N(int64(cfg.Arrival))))
	}
	l.convergeAfter = time.Duration(w.convergeBound())
	l.giveUpAfter = cfg.Arrival + l.convergeAfter
	l.unlock()
	ctx, stopWorkers := context.WithCancel(context.Background())
	var lag sync.WaitGroup
	lag.Go(func() { l.lag.run(ctx) })
	workers := l.startWorkers(ctx)
	var clients sync.WaitGroup
	for i := range cfg.Clients {
		clients.Go(func() { l.client(w.clients[i], starts[i]) })
	}
	time.Sleep(cfg.Arrival)
	l.lock().healed = true
	l.unlock()
	clients.Wait()
	for !l.settled() && l.inTime() {
		time.Sleep(cfg.ReconcileEvery)
	}
	stopWorkers()
	workers.Wait()
	lag.Wait()
	w = l.lock()
	defer l.unlock()
	w.report.HostStall, w.report.HostStallMax = l.lag.sum()
	w.report.Converged = l.settledLocked()
	w.check.final()
	if len(w.report.Violations) == 0 {
		l.recount.compare(&w.check, w.metrics.Total, allCounters)
	}
	w.report.finish(w)
}

// startWorkers runs the real Sweeper and Reconciler until ctx ends.
func (l *live) startWorkers(ctx context.Context) *sync.WaitGroup {
	w := l.w
	var wg sync.WaitGroup
	l.sweepMeta, l.reconcileMeta = opMeta{actor: ActorSweeper, scope: -1}, opMeta{actor: ActorReconciler, scope: -1}
	build := func(meta *opMeta) *idem.Executor {
		ex, err := idem.New(l.view(meta, nil), idem.WithPolicy(w.policy), idem.WithMetrics(l.metrics))
		if err != nil {
			panic(err) // unreachable: the policy was validated
		}
		return ex
	}
	quiet := idem.WithErrorHandler(func(error) {}) // store faults make runs fail; they are counted
	sweeper, _ := build(&l.sweepMeta).Sweeper(workerLog, quiet)
	check := func(ctx context.Context, rec idem.Record) (idem.Finding, error) {
		w := l.lock()
		defer l.unlock()
		return w.reconcileCheck(ctx, rec)
	}
	reconciler, _ := build(&l.reconcileMeta).Reconciler(check, workerLog, quiet)
	wg.Go(func() { _ = sweeper.Run(ctx, w.cfg.SweepEvery) })
	wg.Go(func() { _ = reconciler.Run(ctx, w.cfg.ReconcileEvery) })
	return &wg
}

// inTime is whether the run has not yet given up: the convergence bound
// after the arrivals (the last one, if it came late), plus every stall of
// the host (live_lag.go).
func (l *live) inTime() bool {
	stalls, _ := l.lag.sum()
	deadline := max(l.giveUpAfter, time.Duration(l.lastArrival.Load())+l.convergeAfter)
	return time.Since(l.start) < deadline+stalls
}

// arrived notes that a client made a request now; under the world's lock,
// which orders the arrivals (inTime reads without it).
func (l *live) arrived() {
	l.lastArrival.Store(max(l.lastArrival.Load(), int64(time.Since(l.start))))
}

// client sends its requests, each at its start, one after the other, each
// until it has a definitive answer or the run gives up.
func (l *live) client(c *client, starts []time.Duration) {
	for _, at := range starts {
		time.Sleep(time.Until(l.start.Add(at)))
		l.lock()
		req := c.makeRequest()
		l.arrived()
		l.unlock()
		for attempt := 0; l.inTime(); attempt++ {
			if l.send(req, attempt) {
				break
			}
		}
	}
}

// send is one attempt of req (and, with FaultDuplicate, a concurrent second
// one); true once req has a definitive answer.
func (l *live) send(req *request, n int) bool {
	w := l.lock()
	cfg := w.cfg
	dup := l.schedule(FaultDuplicate, w.rng.net)
	lost := w.fault(FaultLostResponse, w.rng.net)
	backoff := min(cfg.ClientBackoffBase<<min(n, 20), cfg.ClientBackoffMax)
	wait := time.Duration(w.rng.clients.Int64N(int64(backoff) + 1))
	first := l.newCall(req)
	var second *liveCall
	if dup {
		second = l.newCall(req)
	}
	l.unlock()
	var both sync.WaitGroup
	if second != nil {
		both.Go(func() { second.do(false) })
	}
	a, ok := first.do(lost)
	both.Wait()
	if ok && a.definitive {
		return true
	}
	if ok {
		wait = max(wait, time.Duration(a.retryAfter))
	}
	time.Sleep(wait)
	l.lock()
	defer l.unlock()
	return req.done
}

// settled is world.settled under the lock.
func (l *live) settled() bool {
	l.lock()
	defer l.unlock()
	return l.settledLocked()
}

func (l *live) settledLocked() bool {
	w := l.w
	if !w.healed || w.report.Done < w.cfg.Requests {
		return false
	}
	for i := range w.shadow {
		st := w.shadow[i].Status
		if st == core.StatusInProgress || st == core.StatusUnknown && !w.shadow[i].ReconcileAfter.IsZero() {
			return false
		}
	}
	return true
}

// RunLiveSeeds is RunLive for n consecutive seeds from cfg.Seed, one after
// the other (each is many goroutines already).
// Over open's stores when open is not nil (RunLiveOn).
func RunLiveSeeds(cfg Config, n int, open OpenLiveStore, progress func(done int)) ([]*Report, error) {
	var reports []*Report
	for i := range n {
		c := cfg
		c.Seed = cfg.Seed + uint64(i)
		r, err := RunLiveOn(c, open)
		if err != nil {
			return nil, err
		}
		reports = append(reports, r)
		if progress != nil {
			progress(i + 1)
		}
	}
	return reports, nil
}
