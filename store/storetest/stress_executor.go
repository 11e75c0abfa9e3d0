package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/idemkit/idem/linearizability"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// stressExecutor has goroutines call Executor.Do on a few scopes with
// actions that succeed, refuse before sending (NotExecuted), fail after or
// before executing (unknown), panic, or outlive their lease (half of the
// executors do not heartbeat), beside a sweeper and a reconciler that asks
// the downstream. Besides linearizability it checks at most one side effect
// per scope and byte-identical replays.
func stressExecutor(ctx context.Context, s store.Store, h *historySpec) (*historyOut, error) {
	run := &executorRun{ctx: ctx, h: h, rec: linearizability.NewRecorder(s, nil), p: executorPolicy(h.rng(1 << 15)), down: newDownstream()}
	stop := run.background(h.cfg.goroutines)
	goAll(h.cfg.goroutines, run.client)
	stop()
	problems := append(run.problems.all(), run.down.twice...)
	problems = append(problems, run.replayProblems()...)
	out := &historyOut{store: run.rec.StoreHistory(), life: run.rec.LifecycleHistory(), policy: run.p, problems: problems}
	out.summaries = append(out.summaries, fmt.Sprintf("executor answers (fail %v): %v; %d scopes executed", run.p.Fail, &run.answers, len(run.down.executed)),
		lifeOverlap(out.life), storeOverlap(out.store))
	return out, nil
}

// executorPolicy is the policy of an executor stress: leases short enough to
// run out under the actions' sleeps, and a TTL that never does.
func executorPolicy(rng *rand.Rand) core.Policy {
	p := core.PolicyDefault()
	p.LeaseDuration = 3 * time.Millisecond
	p.TTL = time.Hour
	p.InFlightWait = time.Millisecond
	p.RetryAfter = time.Millisecond
	p.ReconcileBackoffBase, p.ReconcileBackoffMax, p.ReconcileAttemptsMax = time.Millisecond, 4*time.Millisecond, 4
	if rng.IntN(2) == 0 {
		p.Fail = core.FailEvict
	}
	return p
}

// executorRun is one history of the executor stress: what its clients, its
// sweeper and its reconciler share.
type executorRun struct {
	ctx  context.Context
	h    *historySpec
	rec  *linearizability.Recorder
	p    core.Policy
	down *downstream

	answers  counter
	problems problemLog
	mu       sync.Mutex
	replays  []replay
}

// replay is a response Do replayed, checked against what executed.
type replay struct {
	scope core.Scope
	resp  core.Response
}

// background starts the sweeper (client first) and the reconciler (client
// first+1). stop ends them after one last pass each, and waits.
func (r *executorRun) background(first int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go r.passes(&wg, done, first, store.DueSweep, sweepEvent)
	go r.passes(&wg, done, first+1, store.DueReconcile, r.resolveEvent)
	return func() {
		close(done)
		wg.Wait()
	}
}

// passes is a sweeper or a reconciler: a pass over the due records every
// 300 µs until done, and one more after.
func (r *executorRun) passes(wg *sync.WaitGroup, done <-chan struct{}, client int, kind store.DueKind, eventFor func(*core.Record, *rand.Rand) core.Event) {
	defer wg.Done()
	c := r.rec.Client(client)
	rng := r.h.rng(client)
	for {
		dueAndApply(r.ctx, c, &r.p, r.h, kind, rng, eventFor, r.problems.add)
		select {
		case <-done:
			dueAndApply(r.ctx, c, &r.p, r.h, kind, rng, eventFor, r.problems.add)
			return
		case <-time.After(300 * time.Microsecond):
		}
	}
}

func sweepEvent(*core.Record, *rand.Rand) core.Event { return core.Event{Kind: core.EventSweep} }

// resolveEvent settles rec with what the downstream says, except one time in
// five, when the reconciler finds nothing (still unknown).
func (r *executorRun) resolveEvent(rec *core.Record, rng *rand.Rand) core.Event {
	f := idem.Finding{Verdict: core.VerdictStillUnknown}
	if rng.IntN(5) != 0 {
		f = r.down.find(rec.Scope, rec.Token)
	}
	return core.Event{Kind: core.EventResolve, Token: rec.Token, Verdict: f.Verdict, Response: f.Response}
}

// client is goroutine g: an executor over its own view of the store (odd
// ones never heartbeat, so long actions lose their lease), sending its share
// of the requests.
func (r *executorRun) client(g int, round func()) {
	rng := r.h.rng(g)
	hb := r.p.LeaseDuration / 3
	if g%2 == 1 {
		hb = time.Hour
	}
	ex, err := idem.New(r.rec.Client(g), idem.WithPolicy(r.p), idem.WithHeartbeatInterval(hb))
	if err != nil {
		r.problems.add("idem.New: %v", err)
		return
	}
	n := r.h.opsOf(g, max(r.h.cfg.operations/2, 1))
	for i := range n {
		sc := r.h.scope(rng, i, n)
		fp := fpA
		if rng.IntN(10) == 0 {
			fp = fpB
		}
		round()
		cctx, cancel := maybeDeadline(r.ctx, rng)
		res, err, panicked := doRecovering(cctx, ex, idem.Request{Scope: sc, Fingerprint: fp}, randomAction(rng, r.p.LeaseDuration, r.down))
		cancel()
		if panicked {
			r.answers.add("panicked") // recorded as unknown, then raised again to the caller
			continue
		}
		r.tally(sc, res, err)
	}
}

// doRecovering is Do for a caller that recovers the action's panic, which
// Do raises again once it is recorded.
func doRecovering(ctx context.Context, ex *idem.Executor, req idem.Request, action idem.Action) (res idem.Result, err error, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	res, err = ex.Do(ctx, req, action)
	return res, err, false
}

// tally counts how one Do on sc ended, keeps a replay for the fidelity
// check, and reports an answer no correct store leads to.
func (r *executorRun) tally(sc core.Scope, res idem.Result, err error) {
	var ie *idem.Error
	switch {
	case err == nil && res.Kind == idem.ResultReplayed:
		r.answers.add("replayed")
		r.mu.Lock()
		r.replays = append(r.replays, replay{sc, res.Response})
		r.mu.Unlock()
	case err == nil:
		r.answers.add(res.Kind.String())
	case store.DriverBug(err):
		r.problems.add("Do on %s: the store handed the core a bad record or token: %v", sc, err)
	case errors.Is(err, context.DeadlineExceeded):
		r.answers.add("deadline") // the caller gave up while waiting
	case errors.As(err, &ie):
		r.answers.add(string(ie.Code))
	default:
		r.problems.add("Do on %s: unexpected error %v", sc, err)
	}
}

// replayProblems compares every replay with the side effect that executed.
// Call it once the clients are done.
func (r *executorRun) replayProblems() []string {
	var problems []string
	for _, rp := range r.replays {
		e, ok := r.down.executed[rp.scope]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: replayed %s although nothing executed", rp.scope, rp.resp.Describe()))
		} else if !e.resp.Equal(rp.resp) {
			problems = append(problems, fmt.Sprintf("%s: replayed %s, executed %s", rp.scope, rp.resp.Describe(), e.resp.Describe()))
		}
	}
	return problems
}

// dueAndApply is one pass of a sweeper or reconciler over the history's own
// scopes (the store may hold other records).
func dueAndApply(ctx context.Context, c store.Store, p *core.Policy, h *historySpec, kind store.DueKind, rng *rand.Rand,
	eventFor func(*core.Record, *rand.Rand) core.Event, problem func(string, ...any)) {
	recs, err := c.Due(ctx, kind, 100)
	if err != nil {
		problem("Due(%v): %v", kind, err)
		return
	}
	for i := range recs {
		r := &recs[i]
		if !h.visible[r.Scope] {
			continue
		}
		ev := eventFor(r, rng)
		if _, err := applyOver(ctx, c, p, r.Scope, ev); store.DriverBug(err) {
			problem("%v of %s: the store handed the core a bad record or token: %v", ev.Kind, r.Scope, err)
		}
	}
}
