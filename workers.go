package idem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/flow"
	"github.com/idemkit/idem/store"
)

// Finding is what a reconciliation check learned about an unknown attempt.
type Finding struct {
	Verdict  Verdict  // executed, not executed, or still unknown
	Response Response // the outcome to store, when executed
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

// WorkerOption configures a Sweeper or a Reconciler.
type WorkerOption func(*worker) error

// WithBatchSize sets how many records one RunOnce handles (100 by default).
func WithBatchSize(n int) WorkerOption {
	return func(w *worker) error {
		if n <= 0 {
			return fmt.Errorf("idem: batch size %d must be positive", n)
		}
		w.batch = n
		return nil
	}
}

// WithErrorHandler sets what Run does with an error of RunOnce, besides
// counting it (worker.error). By default it is logged with slog.Default.
func WithErrorHandler(f func(error)) WorkerOption {
	return func(w *worker) error {
		if f == nil {
			return errors.New("idem: nil error handler")
		}
		w.onError = f
		return nil
	}
}

// WithLogger logs to l instead of the executor's logger
// (WithExecutorLogger), or slog.Default if it has none: at WARN a failed
// run (unless WithErrorHandler takes the errors) and a record the
// reconciler gave up on, left for an operator; at DEBUG each record a
// run handled.
func WithLogger(l *slog.Logger) WorkerOption {
	return func(w *worker) error {
		if l == nil {
			return errors.New("idem: nil logger")
		}
		w.log, w.onError = l, logTo(l, w.kind)
		return nil
	}
}

func logTo(l *slog.Logger, kind store.DueKind) func(error) {
	return func(err error) {
		l.Warn("idem: worker run failed", "worker", kind.String(), "error", err)
	}
}

// worker is what a Sweeper and a Reconciler share: the executor's store,
// policy and metrics, checked once by New, and how a run reports errors.
type worker struct {
	store         store.Store
	policy        *Policy
	metrics       Metrics
	kind          store.DueKind
	batch         int
	onError       func(error)
	log           *slog.Logger
	keyHashSecret []byte // the executor's (WithKeyHashSecret)
}

func (e *Executor) newWorker(kind store.DueKind, opts []WorkerOption) (worker, error) {
	w := worker{store: e.store, policy: &e.cfg.Policy, metrics: e.cfg.Metrics, kind: kind, batch: 100,
		log: e.log, keyHashSecret: e.keyHashSecret}
	if w.log == nil {
		w.log = slog.Default()
	}
	w.onError = logTo(w.log, kind)
	for _, o := range opts {
		if err := o(&w); err != nil {
			return worker{}, err
		}
	}
	return w, nil
}

// Sweeper applies Sweep to due records: in_progress past its lease becomes
// unknown (a zombie key, handed to the reconciler); completed and
// failed_retryable past their TTL are expired or deleted by policy. Build it
// with Executor.Sweeper.
type Sweeper struct{ w worker }

// Sweeper returns a sweeper over the executor's store, policy and metrics.
func (e *Executor) Sweeper(opts ...WorkerOption) (*Sweeper, error) {
	w, err := e.newWorker(store.DueSweep, opts)
	if err != nil {
		return nil, err
	}
	return &Sweeper{w}, nil
}

// RunOnce handles one batch of due records and says how many it changed or
// deleted: leases ended, records expired, and tombstones pruned. A loop
// that drains until RunOnce says 0 therefore stops only when nothing in the
// batch was due.
func (s *Sweeper) RunOnce(ctx context.Context) (changed int, err error) {
	return s.w.forDue(ctx, func(*Record) core.Event {
		return core.Event{Kind: core.EventSweep}
	}, core.DecisionLeaseExpired, core.DecisionExpired, core.DecisionPruned)
}

// Run calls RunOnce every interval until ctx is done, reporting each error
// (see WithErrorHandler), and returns ctx's error.
func (s *Sweeper) Run(ctx context.Context, interval time.Duration) error {
	return s.w.every(ctx, interval, s.RunOnce)
}

// Reconciler settles unknown records: it lists those due, asks its Check,
// and applies what it found. Only executed or not executed settles a record;
// still unknown backs off, and after the policy's maximum the record is
// left for an operator (counted in reconcile.failed). Build it with
// Executor.Reconciler.
type Reconciler struct {
	w     worker
	check Check
}

// Reconciler returns a reconciler over the executor's store, policy and
// metrics that asks check about each due record.
func (e *Executor) Reconciler(check Check, opts ...WorkerOption) (*Reconciler, error) {
	if check == nil {
		return nil, errors.New("idem: Reconciler without a Check")
	}
	w, err := e.newWorker(store.DueReconcile, opts)
	if err != nil {
		return nil, err
	}
	return &Reconciler{w: w, check: check}, nil
}

// Error codes the reconciler leaves on a record it could not settle.
const (
	codeCheckFailed    ErrorCode = "check_failed"    // the Check returned an error, or panicked
	codeFindingInvalid ErrorCode = "finding_invalid" // the Check's finding cannot be stored (no verdict, or a response the core refuses)
	// flow.ErrorCodeStoreRejected: the store rejected the finding's write
)

// RunOnce handles one batch of due records and says how many it settled. A
// record whose Check fails or panics, whose finding the core refuses (a
// response too large, or not valid HTTP), or whose finding's write the
// store rejects (store.ErrRejected), is rescheduled as still unknown with
// why (its last error code), after the policy's backoff, and counted in
// worker.error; the batch goes on. A panic in the Check is recovered: one
// bad record must not stop every run, nor come first in the next.
func (r *Reconciler) RunOnce(ctx context.Context) (settled int, err error) {
	return r.w.forDue(ctx, func(rec *Record) core.Event {
		f, err := r.safeCheck(ctx, rec)
		if err != nil {
			r.w.metrics.Add(CounterWorkerError, Labels{UseCase: rec.Scope.UseCase, Event: core.EventResolve.String()}, 1)
			return stillUnknown(rec, codeCheckFailed)
		}
		return resolveEvent(rec, f) // a finding the core refuses or the store rejects is handled by forDue
	}, core.DecisionResolved)
}

// safeCheck is the Check, with a panic turned into an error: a failed
// check like any other.
func (r *Reconciler) safeCheck(ctx context.Context, rec *Record) (f Finding, err error) {
	defer func() {
		if v := recover(); v != nil {
			f, err = Finding{}, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return r.check(ctx, *rec)
}

// stillUnknown is the Resolve that reschedules rec's attempt, saying why.
func stillUnknown(rec *Record, code ErrorCode) core.Event {
	return core.Event{Kind: core.EventResolve, Token: rec.Token, Verdict: core.VerdictStillUnknown, ErrorCode: code}
}

// Run calls RunOnce every interval until ctx is done, reporting each error
// (see WithErrorHandler), and returns ctx's error.
func (r *Reconciler) Run(ctx context.Context, interval time.Duration) error {
	return r.w.every(ctx, interval, r.RunOnce)
}

// resolveEvent is the event that records f about rec's attempt.
func resolveEvent(rec *Record, f Finding) core.Event {
	return core.Event{Kind: core.EventResolve, Token: rec.Token, Verdict: f.Verdict, Response: f.Response}
}

// forDue lists one batch and applies eventFor's event to each record,
// counting the decisions in counted. It stops at the first store error. An
// error is counted in worker.error too.
func (w *worker) forDue(ctx context.Context, eventFor func(*Record) core.Event, counted ...core.DecisionKind) (int, error) {
	if w.store == nil {
		return 0, errUnbuilt
	}
	n, err := w.forDueOnce(ctx, eventFor, counted)
	if err != nil {
		w.metrics.Add(CounterWorkerError, Labels{Event: w.eventKind().String()}, 1)
	}
	return n, err
}

func (w *worker) forDueOnce(ctx context.Context, eventFor func(*Record) core.Event, counted []core.DecisionKind) (int, error) {
	recs, err := w.store.Due(ctx, w.kind, w.batch)
	if err != nil {
		w.metrics.Add(CounterStoreError, Labels{Event: w.eventKind().String()}, 1)
		return 0, &store.Error{Method: store.MethodDue, Err: err}
	}
	n := 0
	var errs batchErrors
	var a store.Applied // one for the whole batch
	for i := range recs {
		if ctx.Err() != nil {
			errs.add(ctx.Err())
			break
		}
		rec := &recs[i]
		ev := eventFor(rec)
		err := store.Apply(ctx, w.store, rec.Scope, ev, w.policy, &a)
		if code := refusedFinding(ev, err); code != "" {
			// The core refuses the finding, or the store rejects the write
			// it: one bad record must not stop the others, nor come first
			// in every batch. Record why, back off.
			flow.Count(w.metrics, rec.Scope.UseCase, ev.Kind, &a, err)
			errs.add(fmt.Errorf("idem: the finding about %s is refused: %w", rec.Scope, err))
			w.metrics.Add(CounterWorkerError, Labels{UseCase: rec.Scope.UseCase, Event: ev.Kind.String()}, 1)
			ev = stillUnknown(rec, code)
			err = store.Apply(ctx, w.store, rec.Scope, ev, w.policy, &a)
		}
		flow.Count(w.metrics, rec.Scope.UseCase, ev.Kind, &a, err)
		if err != nil {
			if !errors.As(err, new(*store.Error)) {
				err = fmt.Errorf("idem: %v of %s: %w", ev.Kind, rec.Scope, err)
			}
			errs.add(err) // and go on: the next record may be fine
			continue
		}
		if slices.Contains(counted, a.Transition.Decision.Kind) {
			n++
		}
		if a.Transition.Decision.Kind == core.DecisionResolved {
			recordSettled(w.metrics, rec, ev.Kind, &a)
		}
		w.logApplied(ctx, rec, &a)
	}
	return n, errs.err()
}

// recordSettled records the histograms of a reconciler's write that
// settled rec: how long after its attempt's lease ended, and the size of
// the response it stored (an executed finding's).
func recordSettled(m Metrics, rec *Record, ev core.EventKind, a *store.Applied) {
	l := Labels{UseCase: rec.Scope.UseCase, Event: ev.String(), Decision: a.Transition.Decision.Kind.String()}
	flow.Record(m, HistogramReconcileDuration, l, max(a.Now.Sub(rec.LockedUntil), 0).Seconds())
	if a.Record.Status == core.StatusCompleted {
		flow.Record(m, HistogramResponseSize, l, float64(len(a.Record.Response.Body)))
	}
}

// refusedFinding is the code to reschedule a record with when err refused
// ev, a finding about it (not a still-unknown one, which is what a
// reschedule writes): finding_invalid when the core refused it,
// store_rejected when the store did; "" otherwise.
func refusedFinding(ev core.Event, err error) ErrorCode {
	if err == nil || ev.Kind != core.EventResolve || ev.Verdict == core.VerdictStillUnknown {
		return ""
	}
	switch {
	case store.BadInput(err):
		return codeFindingInvalid
	case errors.Is(err, store.ErrRejected):
		return flow.ErrorCodeStoreRejected
	}
	return ""
}

// batchErrors keeps the first few errors of a batch and counts the rest.
type batchErrors struct {
	first []error
	more  int
}

const batchErrorsKept = 4

func (b *batchErrors) add(err error) {
	if len(b.first) < batchErrorsKept {
		b.first = append(b.first, err)
		return
	}
	b.more++
}

func (b *batchErrors) err() error {
	if b.more > 0 {
		b.first = append(b.first, fmt.Errorf("idem: and %d more errors in the batch", b.more))
	}
	return errors.Join(b.first...)
}

func (w *worker) eventKind() core.EventKind {
	if w.kind == store.DueReconcile {
		return core.EventResolve
	}
	return core.EventSweep
}

// errUnbuilt is what a zero Sweeper or Reconciler says, instead of doing
// nothing for ever.
var errUnbuilt = errors.New("idem: a Sweeper or Reconciler must be built by Executor.Sweeper or Executor.Reconciler")

func (w *worker) every(ctx context.Context, interval time.Duration, once func(context.Context) (int, error)) error {
	if w.store == nil {
		return errUnbuilt
	}
	if interval <= 0 {
		return fmt.Errorf("idem: interval %v must be positive", interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := once(ctx); err != nil && ctx.Err() == nil {
			w.onError(err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
