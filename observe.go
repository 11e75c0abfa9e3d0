package idem

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Tracer starts the span of each Do (idemotel.Tracer adapts an
// OpenTelemetry tracer provider). The executor has none by default, and
// then Do spends nothing on tracing.
type Tracer interface {
	// StartDo starts the span of one Do for scope, as a child of ctx's;
	// the action runs on the context it returns. A Tracer decides what of
	// the scope it records: never the key, tenant or principal as they
	// are (see KeyHash).
	StartDo(ctx context.Context, scope Scope) (context.Context, Span)
}

// Span is one Do's span. Do calls it from one goroutine at a time.
type Span interface {
	// StoreCall is a store call the Do made, as an event on the span.
	StoreCall(c StoreCall)
	// End ends the span with what Do answered.
	End(a Answered)
}

// Answered is what a Do's span and log line say of how it ended.
type Answered struct {
	Answer string // how Do answered (Answer)
	// Token is the fencing token of the attempt that ran, or whose
	// outcome was replayed; 0 when none did.
	Token Token
	// Ran: this Do ran an attempt (its action was called).
	Ran bool
	// Recorded: an attempt ran and its outcome's write applied (the
	// outcome stored, the key released, or the key left unknown on
	// purpose). False when it ran but the store failed or the attempt
	// had been fenced off.
	Recorded bool
	Err      error // Do's error, nil for a result
}

// StoreCall is one store call of a Do: the apply of one event (a load and
// a write, or one call of the store's fast path), or a wait.
type StoreCall struct {
	Method   store.Method      // store.MethodApply or store.MethodWait
	Event    core.EventKind    // the event applied (an apply)
	Decision core.DecisionKind // the core's decision, when the apply succeeded
	Elapsed  time.Duration     // on the host's clock
	Err      error             // the store's error; a wait's is never kept (it ends either way)
}

// WithTracer makes each Do a span of t.
func WithTracer(t Tracer) Option { return func(e *Executor) { e.tracer = t } }

// WithExecutorLogger logs what Do did to l: at WARN an outcome that could
// not be recorded (the store failed, or the attempt was fenced off by
// another one), at DEBUG every answer. No key, tenant or principal is
// logged, unless WithKeyHashSecret is set, and then only their KeyHash.
func WithExecutorLogger(l *slog.Logger) Option { return func(e *Executor) { e.log = l } }

// WithKeyHashSecret adds the KeyHash of each request's scope under secret
// to the executor's log lines, so that a support engineer who holds the
// secret can find a client's request without the logs holding its key.
func WithKeyHashSecret(secret []byte) Option {
	return func(e *Executor) { e.keyHashSecret = append([]byte(nil), secret...) }
}

// KeyHash is a keyed hash of s (HMAC-SHA256 under secret, its first 16
// bytes in hex): the same scope and secret give the same hash, and without
// the secret it says nothing of the key, tenant or principal.
func KeyHash(secret []byte, s Scope) string {
	m := hmac.New(sha256.New, secret)
	for _, part := range [...]string{s.Tenant, s.Principal, s.UseCase, s.Key} {
		m.Write([]byte(part))
		m.Write([]byte{0}) // parts hold no NUL (core.Scope.Validate): no two scopes write the same bytes
	}
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// Answer names how Do answered: executed or replayed (Result.Kind), the
// code of an *Error (in_progress, key_misuse, outcome_unknown, ...),
// canceled or deadline_exceeded when the caller went away, else error.
// It is a bounded label.
func Answer(r Result, err error) string {
	var e *Error
	switch {
	case err == nil:
		return r.Kind.String()
	case errors.As(err, &e):
		return string(e.Code)
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	return "error"
}

// observed is what one Do keeps for its span and its log line: the span
// (nil: no tracer), the attempt that ran, and what its outcome's write did.
type observed struct {
	span       Span
	token      Token // the attempt that ran (0: none)
	outcomeRan bool  // the outcome's write was sent
	outcome    core.DecisionKind
	outcomeErr error
}

// storeCall reports a call to the span, if there is one, and remembers
// what the outcome's write did.
func (o *observed) storeCall(c StoreCall, detached bool) {
	if detached {
		o.outcomeRan, o.outcome, o.outcomeErr = true, c.Decision, c.Err
	}
	if o.span != nil {
		o.span.StoreCall(c)
	}
}

// answered is what o says of a Do that returned r and err.
func (o *observed) answered(r Result, err error) Answered {
	a := Answered{Answer: Answer(r, err), Token: r.Token, Err: err}
	switch {
	case o.token == 0: // nothing ran
	case err == nil && r.Kind == ResultExecuted:
		a.Token, a.Ran, a.Recorded = o.token, true, r.Recorded
	default:
		a.Token, a.Ran = o.token, true
		switch o.outcome {
		case core.DecisionFailed, core.DecisionMarkedUnknown, core.DecisionAcknowledged:
			a.Recorded = o.outcomeRan && o.outcomeErr == nil
		}
	}
	return a
}

// logAnswer writes Do's log line: WARN when an attempt ran but its
// outcome is not recorded, DEBUG otherwise.
func (e *Executor) logAnswer(ctx context.Context, scope *Scope, o *observed, a *Answered) {
	level, msg, why := slog.LevelDebug, "idem: answered", ""
	switch {
	case !o.outcomeRan || a.Recorded:
	case o.outcomeErr != nil:
		level, msg, why = slog.LevelWarn, "idem: an outcome could not be recorded", "the store failed"
	case o.outcome == core.DecisionStale || o.outcome == core.DecisionConflict:
		level, msg, why = slog.LevelWarn, "idem: an outcome was refused: the attempt was fenced off", "decision "+o.outcome.String()
	default:
		level, msg, why = slog.LevelWarn, "idem: an outcome could not be recorded", "left unknown for the reconciler"
	}
	if !e.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 6)
	attrs = append(attrs, slog.String("use_case", scope.UseCase), slog.String("answer", a.Answer))
	if a.Token != 0 {
		attrs = append(attrs, slog.Uint64("token", uint64(a.Token)))
	}
	if a.Ran {
		attrs = append(attrs, slog.Bool("recorded", a.Recorded))
	}
	if why != "" {
		attrs = append(attrs, slog.String("why", why))
		if o.outcomeErr != nil {
			attrs = append(attrs, slog.String("error", o.outcomeErr.Error()))
		}
	}
	if e.keyHashSecret != nil {
		attrs = append(attrs, slog.String("key_hash", KeyHash(e.keyHashSecret, *scope)))
	}
	e.log.LogAttrs(ctx, level, msg, attrs...)
}

// startObserving begins what observes one Do: its span, as a child of
// ctx's (the context it returns, on which the action runs).
func (e *Executor) startObserving(ctx context.Context, s *doScratch, scope *Scope) context.Context {
	s.obs = observed{}
	if e.tracer != nil {
		ctx, s.obs.span = e.tracer.StartDo(ctx, *scope)
	}
	return ctx
}

// endObserving ends the Do's span and writes its log line.
func (e *Executor) endObserving(ctx context.Context, scope *Scope, o *observed, r Result, err error) {
	a := o.answered(r, err)
	if o.span != nil {
		o.span.End(a)
		o.span = nil // the scratch is pooled: it must not keep the span alive
	}
	if e.log != nil {
		e.logAnswer(ctx, scope, o, &a)
	}
}

// observeApply reports one apply of the Do to its span and log line.
func (h *doHost) observeApply(eff *Effect, a *store.Applied, err error) {
	c := StoreCall{Method: store.MethodApply, Event: eff.Event.Kind, Elapsed: time.Since(hostEpoch) - h.s.sent, Err: err}
	if err == nil {
		c.Decision = a.Transition.Decision.Kind
	}
	h.s.obs.storeCall(c, eff.Detached)
}

// logApplied logs what a worker's event did to rec: WARN for a record the
// reconciler gave up on (an operator must settle it), DEBUG otherwise.
func (w *worker) logApplied(ctx context.Context, rec *Record, a *store.Applied) {
	level, msg := slog.LevelDebug, "idem: worker applied"
	if a.Transition.Decision.Kind == core.DecisionAbandoned {
		level, msg = slog.LevelWarn, "idem: the reconciler gave up on a record: it is left for an operator"
	}
	if !w.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 7)
	attrs = append(attrs, slog.String("worker", w.kind.String()), slog.String("use_case", rec.Scope.UseCase),
		slog.String("decision", a.Transition.Decision.Kind.String()), slog.Uint64("token", uint64(rec.Token)))
	if a.Transition.Decision.Kind == core.DecisionAbandoned {
		attrs = append(attrs, slog.Uint64("reconcile_attempts", uint64(a.Record.ReconcileAttempts)), slog.String("last_error_code", string(a.Record.LastErrorCode)))
	}
	if w.keyHashSecret != nil {
		attrs = append(attrs, slog.String("key_hash", KeyHash(w.keyHashSecret, rec.Scope)))
	}
	w.log.LogAttrs(ctx, level, msg, attrs...)
}
