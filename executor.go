package idem

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Action is the caller's side effect. It returns the response to store and
// replay, or an error: NotExecuted(err) when it definitely did nothing, any
// other error (or a panic) when it may have done something.
type Action func(ctx context.Context, a Attempt) (Response, error)

// Executor runs actions at most once per scope over a Store.
type Executor struct {
	store             store.Store
	policy            Policy
	metrics           Metrics
	outcomeTimeout    time.Duration
	heartbeatInterval time.Duration
}

// Option configures an Executor.
type Option func(*Executor)

// WithPolicy sets the lifecycle policy (DefaultPolicy otherwise).
func WithPolicy(p Policy) Option { return func(e *Executor) { e.policy = p } }

// WithMetrics sets where counters go (NopMetrics otherwise).
func WithMetrics(m Metrics) Option { return func(e *Executor) { e.metrics = m } }

// WithOutcomeTimeout bounds the write of an action's outcome, which runs on a
// context detached from the caller's (10 s by default).
func WithOutcomeTimeout(d time.Duration) Option { return func(e *Executor) { e.outcomeTimeout = d } }

// WithHeartbeatInterval sets how often a running action's lease is extended
// (a third of the lease by default).
func WithHeartbeatInterval(d time.Duration) Option {
	return func(e *Executor) { e.heartbeatInterval = d }
}

// New returns an Executor over s. It refuses an invalid policy.
func New(s store.Store, opts ...Option) (*Executor, error) {
	if s == nil {
		return nil, errors.New("idem: New: nil store")
	}
	e := &Executor{store: s, policy: DefaultPolicy(), metrics: NopMetrics{}, outcomeTimeout: 10 * time.Second}
	for _, o := range opts {
		o(e)
	}
	if err := e.policy.Validate(); err != nil {
		return nil, err
	}
	if e.metrics == nil {
		e.metrics = NopMetrics{}
	}
	if e.heartbeatInterval == 0 {
		e.heartbeatInterval = e.policy.LeaseDuration / 3
	}
	if e.heartbeatInterval <= 0 || e.outcomeTimeout <= 0 {
		return nil, fmt.Errorf("idem: New: heartbeat interval %v and outcome timeout %v must be positive", e.heartbeatInterval, e.outcomeTimeout)
	}
	return e, nil
}

// Policy returns the executor's policy.
func (e *Executor) Policy() Policy { return e.policy }

// Begin starts req as a Flow, for a host that performs its effects itself.
func (e *Executor) Begin(req Request) (*Flow, error) {
	f := new(Flow)
	if err := f.init(&e.policy, e.metrics, &req); err != nil {
		return nil, err
	}
	return f, nil
}

// Do runs action for req at most once per scope:
//
//   - a new key (or a failed_retryable one) runs the action with a heartbeat
//     extending its lease, then stores its outcome and returns it (Executed);
//   - a completed key returns the stored response byte for byte (Replayed);
//   - a key running elsewhere is waited for up to the policy's InFlightWait
//     and replayed if it finishes, else ErrInProgress with a RetryAfter;
//   - a key reused with another fingerprint is ErrKeyMisuse;
//   - a key whose outcome is unknown is ErrOutcomeUnknown until the
//     reconciler settles it: nothing runs twice on a guess;
//   - a store failure is ErrStoreUnavailable, and the action does not run;
//   - a caller whose ctx is done before anything ran gets ctx's error as is:
//     that is not the store's failure. Every other error is an *Error.
//
// The action's context is cancelled, with context.Cause ErrLeaseLost, as
// soon as the attempt loses its lease: a heartbeat finds the record taken
// over, or none extended it in time. In that case it is cancelled a margin
// before the lease's end as the executor last knew it (reckoned from when
// the call that granted it was sent), whatever the store does: a store that
// hangs cannot stretch an attempt past its lease. Nothing Do does after the
// action returns waits for a heartbeat under way. Downstream calls must carry the
// attempt's token and a deadline no later than its lease (see Check), so
// that nothing of a lost attempt can land after another one started.
//
// A panic in the action is recorded (the key becomes unknown) and then
// raised again with its own value, so that a recovery above Do (net/http's,
// for http.ErrAbortHandler) sees it as if Do were not there.
//
// Once the action has run, its outcome is written on a context detached from
// ctx (bounded by the outcome timeout): a client that disconnects must not
// turn a charge into an unknown, or worse, into a re-execution.
func (e *Executor) Do(ctx context.Context, req Request, action Action) (Result, error) {
	if action == nil {
		return Result{}, newError(ErrInvalidRequest, errNilAction, 0)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err // the caller went away before anything ran: not the store's failure
	}
	if err := req.Validate(&e.policy); err != nil {
		return Result{}, err
	}
	scratch := scratchPool.Get().(*doScratch)
	defer putScratch(scratch)
	a := &scratch.applied
	// The reserve comes first, outside the Flow: a replay, the most common
	// answer of a retried request, is then a validation, one store call and
	// a copy, without the 800 bytes of a Flow to clear. The time it was
	// sent is where a lease it grants starts on the host's clock.
	scratch.sent = time.Now()
	err := store.Apply(ctx, e.store, req.Scope, core.Event{Kind: core.EventReserve, Fingerprint: req.Fingerprint}, &e.policy, a)
	if err == nil && a.Transition.Decision.Kind == core.DecisionReplay {
		count(e.metrics, req.Scope, core.EventReserve, a, nil)
		return replayed(a), nil
	}
	if err != nil && ctx.Err() != nil {
		return Result{}, ctx.Err() // gone while reserving: nothing ran, and the store did not fail
	}
	return e.doFlow(ctx, &req, action, scratch, err)
}

// doFlow is Do once its reserve was applied (into scratch.applied, or
// failed with reserveErr) and did not settle the request as a replay: the
// Flow's loop, with the action, the wait and the outcome's write.
func (e *Executor) doFlow(ctx context.Context, req *Request, action Action, scratch *doScratch, reserveErr error) (Result, error) {
	var f Flow
	f.start(&e.policy, e.metrics, req)
	a := &scratch.applied
	f.ApplyDone(a, reserveErr)
	applyCtx := ctx
	var panicked *PanicError
	var oc *outcomeCtx
	held := &scratch.held // the attempt's record, from its reserve (store.ApplyHeld)
	defer func() {
		if oc != nil {
			oc.release()
		}
	}()
	for {
		// f.Next() without its copy of the event and the attempt: Do is
		// the Flow's own loop, and a replay is short enough for 400 bytes
		// copied twice to show.
		switch f.nextKind() {
		case EffectApply:
			var err error
			if f.event.Kind == core.EventReserve {
				scratch.sent = time.Now()
			}
			if f.state == flowRecord {
				// The outcome of the attempt this Do holds: a store that can
				// write over the held record without loading it first (a
				// database: one round trip instead of two) is told which.
				err = store.ApplyHeld(applyCtx, e.store, held, f.event, &e.policy, a)
			} else {
				err = store.Apply(applyCtx, e.store, req.Scope, f.event, &e.policy, a)
			}
			if err != nil && f.event.Kind == core.EventReserve && ctx.Err() != nil {
				return Result{}, ctx.Err() // gone while reserving: nothing ran, and the store did not fail
			}
			f.ApplyDone(a, err)
		case EffectRun:
			*held = a.Record // what the reserve that decided Execute left
			resp, err := e.run(ctx, f.attempt, scratch.sent, action)
			if p, ok := err.(*PanicError); ok {
				panicked = p
			}
			oc = &outcomeCtx{parent: ctx, deadline: time.Now().Add(e.outcomeTimeout)}
			applyCtx = oc
			f.RunDone(resp, err)
		case EffectWait:
			start := time.Now()
			if err := e.wait(ctx, req.Scope, f.Next()); err != nil {
				return Result{}, err
			}
			f.WaitDone(time.Since(start))
		case EffectDone:
			if panicked != nil {
				panic(panicked.Value) // recorded as unknown; now the caller's to handle
			}
			return f.Result()
		}
	}
}

var errNilAction = errors.New("nil action")

// doScratch is what a Do fills as it goes, kept in a pool: the Applied of
// every event (400 bytes a flow would otherwise allocate, or copy at every
// event) and the attempt's record from its reserve (store.ApplyHeld), both
// handed to the store, so that on Do's stack they would escape to the heap.
type doScratch struct {
	applied store.Applied
	held    core.Record
	sent    time.Time // when the last reserve was sent
}

var scratchPool = sync.Pool{New: func() any { return new(doScratch) }}

// putScratch returns s to the pool holding nothing: a pooled record must not
// keep a response alive.
func putScratch(s *doScratch) {
	if s.held.Token != 0 { // only an execution holds a record
		s.applied, s.held = store.Applied{}, core.Record{}
	} else {
		// A replay, the hot path: every field of applied is written again by
		// the next Apply, so only what could keep memory alive is cleared
		// (the whole 400 bytes cost a tenth of a replay).
		r := &s.applied.Record
		r.Scope, r.Response, r.LastErrorCode = core.Scope{}, core.Response{}, ""
	}
	scratchPool.Put(s)
}

// wait blocks for an EffectWait. It fails only when the caller gave up: the
// key is still in progress elsewhere, so that is ErrInProgress, wrapping the
// context's error.
func (e *Executor) wait(ctx context.Context, scope Scope, eff Effect) error {
	wctx, cancel := context.WithTimeout(ctx, eff.Wait)
	defer cancel()
	_ = e.store.Wait(wctx, scope, eff.Version, eff.Token) // woken, timed out, or spurious: load again
	if err := ctx.Err(); err != nil {
		return newError(ErrInProgress, err, e.policy.RetryAfter)
	}
	return nil
}

// run calls action as the attempt at, whose reserve was sent at sent, with
// a heartbeat beside it that cancels the action's context if the lease is
// lost. A panic comes back as a *PanicError, for Do to record before
// raising it again.
func (e *Executor) run(ctx context.Context, at Attempt, sent time.Time, action Action) (resp Response, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	b := e.startHeartbeat(at, sent, cancel)
	defer func() {
		b.stop()
		cancel(nil)
		if r := recover(); r != nil {
			resp, err = Response{}, &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return action(actx, at)
}
