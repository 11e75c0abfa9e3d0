package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
)

// recordsTable is the store's table, quoted for a query.
func (r *run) recordsTable() string {
	return pgx.Identifier{r.schema, "idem_records"}.Sanitize()
}

// converge runs ex's sweeper and reconciler until no record is in progress
// or unknown, or 30 seconds have passed (check reports what is left).
func (r *run) converge(ctx context.Context, ex *idem.Executor) {
	sweeper, _ := ex.Sweeper()
	reconciler, _ := ex.Reconciler(r.led.check)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _ = sweeper.RunOnce(ctx)
		_, _ = reconciler.RunOnce(ctx)
		var open int
		err := r.pool.QueryRow(ctx, "SELECT count(*) FROM "+r.recordsTable()+" WHERE status IN ('in_progress', 'unknown')").Scan(&open)
		if err == nil && open == 0 || time.Now().After(deadline) {
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
// being what each key now replays.
func (r *run) check(ctx context.Context, final map[core.Scope]idem.Response) {
	r.checkExecutedOnce()
	r.checkNoLostCompletion(final)
	r.checkConverged(ctx)
	r.checkLifecycle()
}

// violation adds one to the report.
func (r *run) violation(format string, args ...any) {
	r.rep.Violations = append(r.rep.Violations, fmt.Sprintf(format, args...))
}

// checkExecutedOnce: the downstream was charged at most once per key.
func (r *run) checkExecutedOnce() {
	for sc, cs := range r.led.charges {
		if len(cs) > 1 {
			r.rep.DoubleExecutions++
			r.violation("%s executed %d times (tokens %v)", sc.Key, len(cs), cs)
		}
	}
}

// checkNoLostCompletion: every response a client got is what its key now
// replays, and so is the body the downstream charged for.
func (r *run) checkNoLostCompletion(final map[core.Scope]idem.Response) {
	for sc, rs := range r.seen.by {
		for _, res := range rs {
			if f, ok := final[sc]; ok && !f.Equal(res) {
				r.rep.LostCompletions++
				r.violation("%s: a client got %q, the key now replays %q", sc.Key, res.Body, f.Body)
				break
			}
		}
	}
	for sc, f := range final {
		if cs := r.led.charges[sc]; len(cs) == 1 && string(f.Body) != cs[0].body {
			r.rep.LostCompletions++
			r.violation("%s: executed as %q, replays %q", sc.Key, cs[0].body, f.Body)
		}
	}
}

// checkConverged: no record is left in progress or unknown.
func (r *run) checkConverged(ctx context.Context) {
	_ = r.pool.QueryRow(ctx, "SELECT count(*) FILTER (WHERE status = 'in_progress'), count(*) FILTER (WHERE status = 'unknown') FROM "+
		r.recordsTable()).Scan(&r.rep.InProgressLeft, &r.rep.UnknownLeft)
	if r.rep.InProgressLeft+r.rep.UnknownLeft > 0 {
		r.violation("%d in_progress and %d unknown left after convergence", r.rep.InProgressLeft, r.rep.UnknownLeft)
	}
}

// checkLifecycle: the history of every store call the run made, the
// clients' and the workers', is linearizable.
func (r *run) checkLifecycle() {
	life := r.rec.LifecycleHistory()
	r.rep.LifecycleOps = len(life)
	lr := linearizability.CheckLifecycleHistory(life, r.p, linearizability.CheckOptions{
		ModelOptions: linearizability.ModelOptions{TimeResolution: time.Microsecond}, Timeout: time.Minute, Name: "chaospg"})
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
