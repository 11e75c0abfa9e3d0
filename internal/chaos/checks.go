package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	"github.com/idemkit/idem/store"
)

// converge runs ex's sweeper and reconciler until no record is in progress
// or unknown, or 30 seconds have passed (check reports what is left).
func (r *run) converge(ctx context.Context, ex *idem.Executor) {
	sweeper, _ := ex.Sweeper()
	reconciler, _ := ex.Reconciler(r.led.check)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _ = sweeper.RunOnce(ctx)
		_, _ = reconciler.RunOnce(ctx)
		inProgress, unknown, err := r.t.Open(ctx, r.keys)
		if err == nil && inProgress+unknown == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// finalAnswers asks every key once more through ex: each answer must be
// definitive. A key without one is a violation, and is left out.
func (r *run) finalAnswers(ctx context.Context, ex *idem.Executor) map[core.Scope]idem.Response {
	final := map[core.Scope]idem.Response{}
	for _, sc := range r.keys {
		var res idem.Result
		var err error
		for range 5 { // a client retries what was not executed
			if res, err = ex.Do(ctx, idem.Request{Scope: sc, Fingerprint: fingerprint}, r.led.action(sc, 0)); !errors.Is(err, idem.ErrNotExecuted) {
				break
			}
		}
		if err != nil {
			r.violation("%s: no definitive answer after convergence: %v", sc.Key, err)
			continue
		}
		final[sc] = res.Response
	}
	return final
}

// check checks the invariants of SPEC §6 once the run has converged, final
// being what each key now replays. It first finds the writes the store
// lost: on a key that lost to a crash what the store's durability allows
// it to, what follows from the loss is measured, not a violation.
func (r *run) check(ctx context.Context, final map[core.Scope]idem.Response) {
	life := r.rec.LifecycleHistory()
	ex := r.checkLostWrites(life)
	r.checkExecutedOnce(ex.writes)
	r.checkNoLostCompletion(final, ex.writes)
	r.checkConverged(ctx)
	r.checkLifecycle(life, ex)
}

// violation adds one to the report.
func (r *run) violation(format string, args ...any) {
	r.rep.Violations = append(r.rep.Violations, fmt.Sprintf(format, args...))
}

// excused are the keys whose losses to a crash the store's durability
// allows: writes (and with them at most once) or only reads.
type excused struct{ writes, reads map[core.Scope]bool }

func (e excused) any(sc core.Scope) bool { return e.writes[sc] || e.reads[sc] }

// checkLostWrites counts what the store lost, and returns the keys on
// which a loss is excused (cfg.MayLose). Every other loss is a violation.
func (r *run) checkLostWrites(life []linearizability.LifecycleOperation) excused {
	r.crashMu.Lock()
	crashes := append([]span(nil), r.crashes...)
	r.crashMu.Unlock()
	r.rep.Crashes = len(crashes)
	ex := excused{writes: map[core.Scope]bool{}, reads: map[core.Scope]bool{}}
	for _, l := range findLost(life, crashes) {
		if l.acked {
			r.rep.LostWrites++
		} else {
			r.rep.LostSeen++
		}
		switch {
		case l.crash && l.acked && r.cfg.MayLose >= LosesWrites:
			ex.writes[l.scope] = true
		case l.crash && !l.acked && r.cfg.MayLose >= LosesReads:
			ex.reads[l.scope] = true
		case l.crash:
			r.violation("%s: a crash lost %s", l.scope.Key, l.describe())
		default:
			r.violation("%s: lost without a crash: %s", l.scope.Key, l.describe())
		}
	}
	for sc := range ex.writes {
		delete(ex.reads, sc)
	}
	r.rep.ExcusedKeys = len(ex.writes) + len(ex.reads)
	return ex
}

// checkExecutedOnce: the downstream was charged at most once per key.
func (r *run) checkExecutedOnce(excused map[core.Scope]bool) {
	for sc, cs := range r.led.charges {
		if len(cs) > 1 {
			r.rep.DoubleExecutions++
			if !excused[sc] {
				r.violation("%s executed %d times (tokens %v)", sc.Key, len(cs), cs)
			}
		}
	}
}

// checkNoLostCompletion: every response a client got is what its key now
// replays, and so is the body the downstream charged for.
func (r *run) checkNoLostCompletion(final map[core.Scope]idem.Response, excused map[core.Scope]bool) {
	for sc, rs := range r.seen.by {
		for _, res := range rs {
			if f, ok := final[sc]; ok && !f.Equal(res) {
				r.rep.LostCompletions++
				if !excused[sc] {
					r.violation("%s: a client got %q, the key now replays %q", sc.Key, res.Body, f.Body)
				}
				break
			}
		}
	}
	for sc, f := range final {
		if cs := r.led.charges[sc]; len(cs) == 1 && string(f.Body) != cs[0].body {
			r.rep.LostCompletions++
			if !excused[sc] {
				r.violation("%s: executed as %q, replays %q", sc.Key, cs[0].body, f.Body)
			}
		}
	}
}

// checkConverged: no record is left in progress or unknown.
func (r *run) checkConverged(ctx context.Context) {
	var err error
	r.rep.InProgressLeft, r.rep.UnknownLeft, err = r.t.Open(ctx, r.keys)
	if err != nil {
		r.violation("counting the records left open: %v", err)
	}
	if r.rep.InProgressLeft+r.rep.UnknownLeft > 0 {
		r.violation("%d in_progress and %d unknown left after convergence", r.rep.InProgressLeft, r.rep.UnknownLeft)
	}
}

// checkLifecycle: the history of every store call the run made, the
// clients' and the workers', is linearizable, on every key whose losses
// are not excused (on those, the store forgot what it had acknowledged).
func (r *run) checkLifecycle(life []linearizability.LifecycleOperation, ex excused) {
	kept := life[:0:0]
	for _, op := range life {
		if !ex.any(op.Scope) {
			kept = append(kept, op)
		}
	}
	r.rep.LifecycleOps = len(kept)
	lr := linearizability.CheckLifecycleHistory(kept, r.p, linearizability.CheckOptions{
		ModelOptions: linearizability.ModelOptions{TimeResolution: time.Microsecond}, Timeout: time.Minute, Name: r.cfg.Name})
	r.rep.Linearizable = lr.OK()
	if !r.rep.Linearizable {
		r.violation("%s", "lifecycle history: "+firstLines(lr.String(), 12))
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// CountOpen counts the records in progress and unknown among keys, loading
// each from s, eight at a time: a Target's Open over a store that cannot
// list.
func CountOpen(ctx context.Context, s store.Store, keys []core.Scope) (inProgress, unknown int, err error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan core.Scope)
	for range 8 {
		wg.Go(func() {
			for sc := range next {
				snap, lerr := s.Load(ctx, sc)
				mu.Lock()
				switch {
				case lerr != nil:
					err = lerr
				case snap.Record.Status == core.StatusInProgress:
					inProgress++
				case snap.Record.Status == core.StatusUnknown:
					unknown++
				}
				mu.Unlock()
			}
		})
	}
	for _, sc := range keys {
		next <- sc
	}
	close(next)
	wg.Wait()
	return inProgress, unknown, err
}
