package idem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/idemkit/idem/core"
)

// Finding is what a reconciliation check learned about an unknown attempt.
type Finding struct {
	Verdict  core.Verdict // executed, not executed, or still unknown
	Response Response     // the outcome to store, when executed
}

// Check looks downstream (the payment gateway's ledger, say) for the truth
// about rec's attempt, identified by rec.Scope and rec.Token. An error counts
// as "still unknown": the record is looked at again after a backoff.
//
// "Not executed" re-opens the key for execution, so a Check may answer it
// only when the attempt can no longer act: a request of the attempt still
// on its way downstream could land after the answer and charge twice. Pass
// Attempt.LockedUntil downstream as a deadline the downstream enforces; then
// after rec.LockedUntil (which only grows) no request of the attempt can
// land, and an absent charge is proof. Before it, answer still unknown.
type Check func(ctx context.Context, rec Record) (Finding, error)

// ResolveEvent is the event that records f about rec's attempt.
func ResolveEvent(rec *Record, f Finding) core.Event {
	return core.Event{Kind: core.EventResolve, Token: rec.Token, Verdict: f.Verdict, Response: f.Response}
}

// Reconciler settles unknown records: it lists those due, asks Check, and
// applies what it found. Only executed or not executed settles a record;
// still unknown backs off, and after the policy's maximum the record is
// left for an operator (counted in reconcile.failed).
type Reconciler struct {
	Store     Store
	Policy    Policy
	Check     Check
	Metrics   Metrics // NopMetrics if nil
	BatchSize int     // records per RunOnce; 100 if zero
}

// RunOnce handles one batch of due records and says how many it settled.
func (r *Reconciler) RunOnce(ctx context.Context) (settled int, err error) {
	if r.Check == nil {
		return 0, errors.New("idem: Reconciler without a Check")
	}
	return forDue(ctx, r.Store, &r.Policy, r.Metrics, DueReconcile, r.BatchSize, func(rec *Record) core.Event {
		f, err := r.Check(ctx, *rec)
		if err != nil || f.Verdict == core.VerdictInvalid {
			f = Finding{Verdict: core.VerdictStillUnknown}
		}
		return ResolveEvent(rec, f)
	}, core.DecisionResolved)
}

// Run calls RunOnce every interval until ctx is done.
func (r *Reconciler) Run(ctx context.Context, interval time.Duration) error {
	return every(ctx, interval, r.RunOnce)
}

// Sweeper applies Sweep to due records: in_progress past its lease becomes
// unknown (a zombie key, handed to the reconciler); completed and
// failed_retryable past their TTL are expired or deleted by policy.
type Sweeper struct {
	Store     Store
	Policy    Policy
	Metrics   Metrics
	BatchSize int
}

// RunOnce handles one batch of due records and says how many it changed.
func (s *Sweeper) RunOnce(ctx context.Context) (changed int, err error) {
	return forDue(ctx, s.Store, &s.Policy, s.Metrics, DueSweep, s.BatchSize, func(*Record) core.Event {
		return core.Event{Kind: core.EventSweep}
	}, core.DecisionLeaseExpired, core.DecisionExpired)
}

// Run calls RunOnce every interval until ctx is done.
func (s *Sweeper) Run(ctx context.Context, interval time.Duration) error {
	return every(ctx, interval, s.RunOnce)
}

// forDue lists one batch of kind and applies eventFor's event to each record,
// counting the decisions in counted. It stops at the first store error.
func forDue(ctx context.Context, s Store, p *Policy, m Metrics, kind DueKind, batch int,
	eventFor func(*Record) core.Event, counted ...core.DecisionKind) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if m == nil {
		m = NopMetrics{}
	}
	if batch <= 0 {
		batch = 100
	}
	recs, err := s.Due(ctx, kind, batch)
	if err != nil {
		m.Add(CounterStoreError, Labels{Outcome: "due_" + kind.String()}, 1)
		return 0, &StoreError{Call: "due", Err: err}
	}
	n := 0
	var a Applied // one for the whole batch
	for i := range recs {
		ev := eventFor(&recs[i])
		if err := ApplyInto(ctx, s, p, m, recs[i].Scope, ev, &a); err != nil {
			var se *StoreError
			if errors.As(err, &se) {
				return n, err
			}
			return n, fmt.Errorf("idem: %v of %s: %w", ev.Kind, recs[i].Scope, err)
		}
		if slices.Contains(counted, a.Result.Decision.Kind) {
			n++
		}
	}
	return n, nil
}

func every(ctx context.Context, interval time.Duration, once func(context.Context) (int, error)) error {
	if interval <= 0 {
		return fmt.Errorf("idem: interval %v must be positive", interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		// Errors are counted (store.error) and retried on the next tick.
		_, _ = once(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
