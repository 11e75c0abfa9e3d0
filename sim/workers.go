package sim

import (
	"context"
	"errors"
	"iter"
	"log/slog"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// errWorldStopped ends a worker's run that was under way when the world
// stopped.
var errWorldStopped = errors.New("sim: the world stopped")

// workerActor runs the real idem sweeper or reconciler as an actor on
// virtual time: its RunOnce runs as a coroutine (iter.Pull, so the switch
// is deterministic) that suspends at each store call and at each look at
// the gateway's ledger, for their latency. A worker's load, check and write
// are separate steps, between which servers act: an owner's late Complete
// can come after the reconciler loaded the record and before it wrote.
type workerActor struct {
	w     *world
	meta  *opMeta
	run   func(context.Context) (int, error)
	every int64
	after func() bool // called when a run ends; false stops ticking

	next   func() (int64, bool)
	stop   func()
	yield  func(int64) bool
	cancel context.CancelFunc
	alive  bool // the coroutine is under way
	halted bool // the world stopped during a run: no more store calls

	// A reconciler's: what its last Check found (meta.finding points
	// here), the ledger as the seed drew it, and the second reconciler
	// beside it, if the seed drew one (ticked and ended with it).
	found     findingSeen
	ledger    *reconcileWorld
	sibling   *workerActor
	siblingOn bool

	// changed counts the writes of the run under way that the worker
	// heard succeed, and rejected the findings the store rejected in it that
	// no call has rescheduled yet, for the checker (check_workers.go).
	changed int
	refused []attemptID
}

// Kinds of worker events: scheduled as a handler's, since a method value
// (a.resume) would allocate a closure at each of a run's store calls.
const (
	evWorkerTick uint8 = iota
	evWorkerResume
)

func (a *workerActor) handle(kind uint8) {
	if kind == evWorkerTick {
		a.tick()
	} else {
		a.resume()
	}
}

// runEnded is what the coroutine yields when a run is over.
const runEnded = -1

// tick starts a run. One coroutine serves every run of the actor (its
// goroutine and its grown stack are kept from tick to tick): it yields
// runEnded after each run and waits for the next tick.
func (a *workerActor) tick() {
	if a.w.stopped {
		return
	}
	if a.sibling != nil && !a.siblingOn {
		// The second reconciler ticks half a period after the first.
		a.siblingOn = true
		a.w.afterH(a.every/2, a.sibling, evWorkerTick)
	}
	if !a.alive {
		ctx, cancel := context.WithCancel(context.Background())
		a.next, a.stop = iter.Pull(func(yield func(int64) bool) {
			a.yield = yield
			for {
				a.changed = 0
				n, err := a.run(ctx)
				if !a.halted {
					a.w.check.workerRan(a, n, err) // check_workers.go
				}
				if !yield(runEnded) {
					return
				}
			}
		})
		a.cancel, a.alive = cancel, true
	}
	a.resume()
}

// resume runs the coroutine to its next suspension, and schedules the one
// after it, or the next tick.
func (a *workerActor) resume() {
	if a.w.stopped {
		a.end()
		return
	}
	d, ok := a.next()
	switch {
	case !ok:
		a.end()
	case d != runEnded:
		a.w.afterH(d, a, evWorkerResume)
	case a.after():
		every := a.every
		if a.w.healed && a.meta.actor == ActorSweeper {
			every = int64(a.w.cfg.SweepEvery) // a seldom sweeper is a fault: it stops with the others
		}
		a.w.afterH(every, a, evWorkerTick)
	}
}

// end stops the coroutine, if it is under way: what remains of its run
// returns at once, making no store call.
func (a *workerActor) end() {
	if a.alive {
		a.alive, a.halted = false, true
		a.cancel()
		a.stop()
	}
	if a.sibling != nil {
		a.sibling.end()
	}
}

// suspend lets d of virtual time pass for the worker; false means the world
// stopped meanwhile.
func (a *workerActor) suspend(d int64) bool { return a.yield(d) }

// coStore is the store as a worker actor sees it: each call takes effect
// when it is made, and the worker hears back after the store's latency.
type coStore struct {
	a     *workerActor
	inner store.Store // the worker's view of the faulty store
}

// latency draws the next call's latency; false means the world stopped and
// the call must not be made.
func (c coStore) latency() (int64, bool) {
	if c.a.halted {
		return 0, false
	}
	d := c.a.w.storeLatency()
	c.a.meta.returnAt = c.a.w.now + d
	return d, true
}

func (c coStore) back(d int64) error {
	if !c.a.suspend(d) {
		return errWorldStopped
	}
	return nil
}

func (c coStore) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	d, ok := c.latency()
	if !ok {
		return store.Snapshot{}, errWorldStopped
	}
	snap, err := c.inner.Load(ctx, scope)
	if e := c.back(d); e != nil {
		return store.Snapshot{}, e
	}
	return snap, err
}

func (c coStore) write(do func() error) error {
	d, ok := c.latency()
	if !ok {
		return errWorldStopped
	}
	err := do()
	if e := c.back(d); e != nil {
		return e
	}
	if err == nil {
		c.a.changed++
	}
	return err
}

func (c coStore) Insert(ctx context.Context, rec *core.Record) error {
	return c.write(func() error { return c.inner.Insert(ctx, rec) })
}

func (c coStore) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, t core.Token) error {
	return c.write(func() error { return c.inner.CompareAndSet(ctx, rec, v, t) })
}

func (c coStore) Delete(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	return c.write(func() error { return c.inner.Delete(ctx, scope, v, t) })
}

func (c coStore) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	d, ok := c.latency()
	if !ok {
		return nil, errWorldStopped
	}
	recs, err := c.inner.Due(ctx, kind, limit)
	if e := c.back(d); e != nil {
		return nil, e
	}
	return recs, err
}

func (c coStore) Wait(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	return c.inner.Wait(ctx, scope, v, t)
}

// apply is the fast path's Apply, one call with its latency.
func (c coStore) apply(next store.ApplyFunc) store.ApplyFunc {
	return func(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
		err := c.write(func() error { return next(ctx, scope, ev, p, out) })
		if err == nil && out.Transition.Write.Kind == core.WriteNone {
			c.a.changed-- // heard, but nothing was written
		}
		return err
	}
}

// newWorkerActors builds the sweeper and the reconciler (two, on the seeds
// that draw them) as actors over their own views of the store.
func (w *world) newWorkerActors() {
	w.sweepMeta = opMeta{actor: ActorSweeper, scope: -1}
	w.reconcileMeta = opMeta{actor: ActorReconciler, scope: -1}
	ledger := drawReconcileWorld(w.cfg.Seed, &w.policy, w.cfg.SweepEvery)
	sweep := &workerActor{w: w, meta: &w.sweepMeta, every: int64(ledger.sweepEvery), after: func() bool { return true }}
	w.sweepMeta.worker = sweep
	sweeper, err := w.actorExecutor(sweep).Sweeper(idem.WithBatchSize(50), workerLog)
	if err != nil {
		panic(err) // unreachable: the batch size is positive
	}
	sweep.run = sweeper.RunOnce
	w.sweepActor = sweep
	w.reconcileActor = w.reconcilerActor(&w.reconcileMeta, &ledger, w.afterReconcile)
	if ledger.reconcilers > 1 {
		// The second one only works: the first ends the run once it settled.
		w.reconcileActor.sibling = w.reconcilerActor(&opMeta{actor: ActorReconciler, actorID: 1, scope: -1}, &ledger, func() bool { return true })
	}
}

// workerLog is the workers' logger: none. What they would log is the run's
// own doing, counted and reported (a key given up on is in reconcile.failed
// and the summary's "keys left to an operator"): printed, it was a WARN
// line on simrun's stderr for each, a thousand and more in sim-long.
var workerLog = idem.WithLogger(slog.New(slog.DiscardHandler))

// reconcilerActor is a reconciler actor over meta's view of the store.
func (w *world) reconcilerActor(meta *opMeta, ledger *reconcileWorld, after func() bool) *workerActor {
	a := &workerActor{w: w, meta: meta, every: int64(w.cfg.ReconcileEvery), after: after, ledger: ledger}
	meta.finding, meta.worker = &a.found, a
	reconciler, err := w.actorExecutor(a).Reconciler(w.checkAs(a), idem.WithBatchSize(50), workerLog)
	if err != nil {
		panic(err) // unreachable: the check is set
	}
	a.run = reconciler.RunOnce
	return a
}

// actorExecutor is an executor over a's coroutine view of the store.
func (w *world) actorExecutor(a *workerActor) *idem.Executor {
	view := w.store.view(a.meta)
	co := coStore{a: a, inner: view}
	l := store.Layer{Outer: co, Inner: view}
	if _, fast := view.(store.Applier); fast {
		l.Apply = co.apply
	}
	ex, err := idem.New(store.Wrap(l), idem.WithPolicy(w.policy), idem.WithMetrics(w.metrics))
	if err != nil {
		panic(err) // unreachable: the policy was validated
	}
	return ex
}

// checkAs is the reconciler's Check for actor a: a look at the gateway's
// ledger, a network round trip away (the ledger is read when the question
// arrives), now and then a slow one, and blind to what an attempt did
// until its lease end plus the seed's ledger lag. It tells the lifecycle
// checker what it found, for the Resolve that follows.
func (w *world) checkAs(a *workerActor) idem.Check {
	return func(ctx context.Context, rec idem.Record) (idem.Finding, error) {
		if a.halted || !a.suspend(w.netLatency()+a.ledger.checkDelay(a.meta.actorID)) {
			return idem.Finding{}, errWorldStopped
		}
		var f idem.Finding
		var err error
		// What a check that panics leads to (still unknown), told before
		// the check runs: a panic does not come back here.
		a.found = w.findingSeen(&rec, f, errCheckPanicked)
		if lag := a.ledger.ledgerLag; lag > 0 && w.Time().Before(rec.LockedUntil.Add(lag)) {
			f = idem.Finding{Verdict: core.VerdictStillUnknown}
		} else {
			f, err = w.reconcileCheck(ctx, rec)
		}
		if !a.suspend(w.netLatency()) {
			return idem.Finding{}, errWorldStopped
		}
		a.found = w.findingSeen(&rec, f, err)
		return f, err
	}
}

// findingSeen is the Resolve a Check's answer about rec must lead to: its
// verdict, or still unknown when the Check erred or answered something
// that cannot be stored (no verdict, or an outcome that is not the
// ledger's).
func (w *world) findingSeen(rec *idem.Record, f idem.Finding, err error) findingSeen {
	scope, ok := w.scopeIndex(rec.Scope)
	fs := findingSeen{set: ok, scope: scope, token: rec.Token, verdict: core.VerdictStillUnknown}
	switch {
	case err != nil:
	case f.Verdict == core.VerdictNotExecuted || f.Verdict == core.VerdictStillUnknown:
		fs.verdict = f.Verdict
	case f.Verdict == core.VerdictExecuted:
		if ch := w.gateway.find(attemptID{scope, rec.Token}); ch != nil && sameResponse(ch.response(), f.Response) {
			fs.verdict, fs.response = core.VerdictExecuted, f.Response
		}
	}
	return fs
}

// afterReconcile ends the run once everything settled.
func (w *world) afterReconcile() bool {
	if w.settled() {
		w.stopped = true // converged: nothing left to do
		w.report.Converged = true
		return false
	}
	return true
}
