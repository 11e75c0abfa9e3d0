package linearizability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

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
	rec := NewRecorder(s, nil)
	rng := h.rng(1 << 15)
	p := core.DefaultPolicy()
	p.LeaseDuration = 3 * time.Millisecond
	p.TTL = time.Hour
	p.InFlightWait = time.Millisecond
	p.RetryAfter = time.Millisecond
	p.ReconcileBackoffBase, p.ReconcileBackoffCap, p.ReconcileAttemptsMax = time.Millisecond, 4*time.Millisecond, 4
	if rng.IntN(2) == 0 {
		p.Fail = core.FailEvict
	}
	down := &downstream{executed: map[core.Scope]execution{}, fenced: map[core.Scope]core.Token{}}
	var answers counter
	var mu sync.Mutex
	var problems []string
	problem := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	type replay struct {
		scope core.Scope
		resp  core.Response
	}
	var replays []replay

	stop := make(chan struct{})
	var bg sync.WaitGroup
	bgLoop := func(client int, kind store.DueKind, eventFor func(*core.Record, *rand.Rand) core.Event) {
		defer bg.Done()
		c := rec.Client(client)
		rng := h.rng(client)
		for {
			dueAndApply(ctx, c, &p, h, kind, rng, eventFor, problem)
			select {
			case <-stop:
				dueAndApply(ctx, c, &p, h, kind, rng, eventFor, problem)
				return
			case <-time.After(300 * time.Microsecond):
			}
		}
	}
	bg.Add(2)
	G := h.cfg.goroutines
	go bgLoop(G, store.DueSweep, func(*core.Record, *rand.Rand) core.Event {
		return core.Event{Kind: core.EventSweep}
	})
	go bgLoop(G+1, store.DueReconcile, func(r *core.Record, rng *rand.Rand) core.Event {
		f := idem.Finding{Verdict: core.VerdictStillUnknown}
		if rng.IntN(5) != 0 {
			f = down.find(r.Scope, r.Token)
		}
		return core.Event{Kind: core.EventResolve, Token: r.Token, Verdict: f.Verdict, Response: f.Response}
	})

	goAll(G, func(g int, round func()) {
		rng := h.rng(g)
		hb := p.LeaseDuration / 3
		if g%2 == 1 {
			hb = time.Hour // no heartbeat: long actions lose their lease
		}
		ex, err := idem.New(rec.Client(g), idem.WithPolicy(p), idem.WithHeartbeatInterval(hb))
		if err != nil {
			problem("idem.New: %v", err)
			return
		}
		n := h.opsOf(g, max(h.cfg.operations/2, 1))
		for i := range n {
			sc := h.scope(rng, i, n)
			fp := fpA
			if rng.IntN(10) == 0 {
				fp = fpB
			}
			action := func(ctx context.Context, a idem.Attempt) (idem.Response, error) {
				switch r := rng.IntN(100); {
				case r < 15:
					time.Sleep(time.Duration(rng.IntN(int(p.LeaseDuration / 2))))
				case r < 22:
					time.Sleep(p.LeaseDuration + time.Duration(rng.IntN(int(p.LeaseDuration))))
				}
				r := rng.IntN(100)
				if r < 8 {
					return idem.Response{}, idem.NotExecuted(errors.New("refused before sending"))
				}
				if r < 13 {
					return idem.Response{}, errors.New("timed out before sending") // unknown; did not execute
				}
				resp := responses[rng.IntN(len(responses))].Clone()
				resp.Body = fmt.Appendf(resp.Body, " t%d", a.Token)
				if !down.perform(a.Scope, a.Token, resp) {
					return idem.Response{}, idem.NotExecuted(errors.New("fenced off by the downstream"))
				}
				switch {
				case r < 85:
					return resp, nil
				case r < 96:
					return idem.Response{}, errors.New("timed out after executing")
				}
				panic("the action panicked after executing")
			}
			round()
			cctx, cancel := maybeDeadline(ctx, rng)
			res, err := ex.Do(cctx, idem.Request{Scope: sc, Fingerprint: fp}, action)
			cancel()
			var ie *idem.Error
			switch {
			case err == nil && res.Kind == idem.ResultReplayed:
				answers.add("replayed")
				mu.Lock()
				replays = append(replays, replay{sc, res.Response})
				mu.Unlock()
			case err == nil:
				answers.add(res.Kind.String())
			case store.DriverBug(err):
				problem("Do on %s: the store handed the core a bad record or token: %v", sc, err)
			case errors.Is(err, context.DeadlineExceeded):
				answers.add("deadline") // the caller gave up while waiting
			case errors.As(err, &ie):
				answers.add(string(ie.Code))
			default:
				problem("Do on %s: unexpected error %v", sc, err)
			}
		}
	})
	close(stop)
	bg.Wait()

	problems = append(problems, down.twice...)
	for _, r := range replays {
		e, ok := down.executed[r.scope]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: replayed %s although nothing executed", r.scope, r.resp.Describe()))
		} else if !e.resp.Equal(r.resp) {
			problems = append(problems, fmt.Sprintf("%s: replayed %s, executed %s", r.scope, r.resp.Describe(), e.resp.Describe()))
		}
	}
	out := &historyOut{store: rec.StoreHistory(), life: rec.LifecycleHistory(), policy: p, problems: problems}
	out.summaries = append(out.summaries, fmt.Sprintf("executor answers (fail %v): %v; %d scopes executed", p.Fail, &answers, len(down.executed)),
		lifeOverlap(out.life), storeOverlap(out.store))
	return out, nil
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
