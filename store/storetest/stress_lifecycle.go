package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/idemkit/idem/linearizability"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// stressLifecycle has goroutines apply random events through store.Apply:
// reserves with one of two fingerprints, owner events with the latest token
// or an older one, resolves, sweeps, and pauses long enough for leases and
// TTLs to run out on the store's own clock.
func stressLifecycle(ctx context.Context, s store.Store, h *historySpec) (*historyOut, error) {
	rec := linearizability.NewRecorder(s, nil)
	p := lifecyclePolicy(h.rng(1 << 15))
	if h.tune != nil {
		h.tune(&p)
	}
	tokens := newTokenBook()
	var decisions counter
	var problems problemLog
	goAll(h.cfg.goroutines, func(g int, round func()) {
		rng := h.rng(g)
		c := rec.Client(g)
		n := h.opsOf(g, h.cfg.operations)
		for i := range n {
			sc := h.scope(rng, i, n)
			owner := tokens.pick(rng, sc)
			ev := randomEvent(rng, owner, 1) // the store replaces the fresh token
			round()
			cctx, cancel := maybeDeadline(ctx, rng)
			a, err := applyOver(cctx, c, &p, sc, ev)
			cancel()
			switch {
			case err == nil:
				decisions.add(a.Transition.Decision.Kind.String())
				if a.Transition.Decision.Kind == core.DecisionExecute {
					tokens.add(sc, a.Transition.Decision.Token)
				}
			case store.DriverBug(err):
				problems.add("%v of %s: the store handed the core a bad record or token: %v", ev.Kind, sc, err)
			default:
				decisions.add("error")
			}
			if !h.quick && rng.IntN(40) == 0 {
				time.Sleep(time.Duration(rng.IntN(int(2 * p.LeaseDuration))))
			}
		}
	})
	out := &historyOut{store: rec.StoreHistory(), life: rec.LifecycleHistory(), policy: p, problems: problems.all()}
	out.summaries = append(out.summaries, fmt.Sprintf("lifecycle decisions (lease %v, fail %v, expiry %v): %v", p.LeaseDuration, p.Fail, p.Expiry, &decisions),
		lifeOverlap(out.life), storeOverlap(out.store))
	return out, nil
}

// lifecyclePolicy is the policy of a lifecycle stress: leases and TTLs of a
// few milliseconds, so that they run out within a history, and either
// failure and expiry mode.
func lifecyclePolicy(rng *rand.Rand) core.Policy {
	p := core.PolicyDefault()
	p.LeaseDuration = time.Duration(1+rng.IntN(3)) * time.Millisecond
	p.TTL = 3 * time.Millisecond
	p.RetryAfter = time.Millisecond
	p.ReconcileBackoffBase, p.ReconcileBackoffMax, p.ReconcileAttemptsMax = time.Millisecond, 4*time.Millisecond, 3
	if rng.IntN(3) == 0 {
		p.Fail = core.FailEvict
	}
	if rng.IntN(2) == 0 {
		p.Expiry = core.ExpiryHard
	}
	return p
}
