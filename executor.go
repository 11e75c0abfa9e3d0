package idem

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/flow"
	"github.com/idemkit/idem/store"
)

// Action is the caller's side effect. It returns the response to store and
// replay, or an error: NotExecuted(err) when it definitely did nothing, any
// other error (or a panic) when it may have done something.
type Action func(ctx context.Context, a Attempt) (Response, error)

// Executor runs actions at most once per scope over a Store.
type Executor struct {
	store store.Store
	cfg   flow.Config // what each request's Flow is begun under
	// What observes each Do (observe.go): none by default.
	tracer        Tracer
	log           *slog.Logger
	keyHashSecret []byte
}

// Option configures an Executor.
type Option func(*Executor)

// WithPolicy sets the lifecycle policy (PolicyDefault otherwise).
func WithPolicy(p Policy) Option { return func(e *Executor) { e.cfg.Policy = p } }

// WithMetrics sets where counters go (MetricsNop otherwise).
func WithMetrics(m Metrics) Option { return func(e *Executor) { e.cfg.Metrics = m } }

// WithOutcomeTimeout bounds the write of an action's outcome, which runs on a
// context detached from the caller's (0: flow.OutcomeTimeoutDefault, 10 s).
func WithOutcomeTimeout(d time.Duration) Option {
	return func(e *Executor) { e.cfg.OutcomeTimeout = d }
}

// WithHeartbeatInterval sets how often a running action's lease is extended
// (0: a third of the lease).
func WithHeartbeatInterval(d time.Duration) Option {
	return func(e *Executor) { e.cfg.HeartbeatInterval = d }
}

// New returns an Executor over s. It refuses an invalid policy.
func New(s store.Store, opts ...Option) (*Executor, error) {
	if s == nil {
		return nil, errors.New("idem: New: nil store")
	}
	e := &Executor{store: s, cfg: flow.Config{Policy: PolicyDefault()}}
	for _, o := range opts {
		o(e)
	}
	if err := e.cfg.Fill(); err != nil {
		return nil, err
	}
	return e, nil
}

// Policy returns the executor's policy.
func (e *Executor) Policy() Policy { return e.cfg.Policy }

// Begin starts req as a Flow, for a host that performs its effects itself
// (the simulator, a test): the Flow Do would run for req. It refuses an
// invalid request.
func (e *Executor) Begin(req Request) (*Flow, error) { return e.cfg.Begin(req) }

// BeginIn starts req in f, a Flow the host made or used before: whatever f
// held is dropped. It refuses an invalid request, as Begin does.
func (e *Executor) BeginIn(f *Flow, req Request) error { return e.cfg.BeginIn(f, req) }

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
//
// Do is a host of the request's Flow and of nothing else: it performs each
// Effect the Flow asks for and reports what happened, through the Flow's
// public calls only (the Flow is package flow's: the compiler holds it to that), so that the
// simulator, which hosts the same Flow on virtual time, checks the
// sequence a service runs.
func (e *Executor) Do(ctx context.Context, req Request, action Action) (Result, error) {
	if action == nil {
		return Result{}, &Error{Code: CodeInvalidRequest, Status: ErrInvalidRequest.Status, Err: errNilAction}
	}
	// The scratch goes back to the pool where Do returns or raises the
	// action's panic again, not in a defer: a deferred call is a tenth of
	// a replay. (A store that panics leaves its scratch to the collector.)
	s := scratchPool.Get().(*doScratch)
	h := doHost{e: e, ctx: ctx, s: s, observing: e.tracer != nil || e.log != nil}
	if h.observing {
		h.ctx = e.startObserving(ctx, s, &req.Scope)
	}
	f := &s.flow
	if err := e.BeginIn(f, req); err != nil {
		if h.observing {
			e.endObserving(h.ctx, &req.Scope, &s.obs, Result{}, err)
		}
		putScratch(s)
		return Result{}, err
	}
	for {
		switch eff := f.Next(); eff.Kind {
		case EffectApply:
			h.apply(f, eff, &req.Scope)
		case EffectRun:
			s.obs.token = eff.Attempt.Token
			resp, err := h.run(f, &req.Scope, action)
			f.Ran(resp, err)
		case EffectWait:
			h.wait(f, eff, &req.Scope)
		case EffectAnswer:
			r, err := f.Result()
			p := eff.Panic
			if h.observing {
				e.endObserving(h.ctx, &req.Scope, &s.obs, r, err)
			}
			putScratch(s)
			if p != nil {
				panic(p) // recorded as unknown; now the caller's to handle
			}
			return r, err
		}
	}
}

var errNilAction = errors.New("nil action")

// hostEpoch is a reading of the host's clock at start-up. Do keeps the
// send time of each apply as the time since it, read from the monotonic
// clock alone (the Lease compares host times by their monotonic readings
// only): a time.Now reads the wall clock too, and on every request's path
// that cost a replay a twentieth of its time.
var hostEpoch = time.Now()

// doHost is what one Do keeps while it hosts its Flow: the caller's
// context and its pooled scratch. (The request's scope is passed to each
// call apart: held here, it would go to the heap with the context.)
type doHost struct {
	e         *Executor
	ctx       context.Context
	s         *doScratch
	observing bool // a tracer or a logger: s.obs is kept
}

// apply performs an EffectApply and reports it: on the caller's context, or
// detached from it for the attempt's outcome. The time it is sent is where
// a lease it grants starts on the host's clock.
func (h *doHost) apply(f *Flow, eff *Effect, scope *Scope) {
	ctx := h.ctx
	if eff.Detached {
		if h.s.outcome == nil {
			h.s.outcome = &outcomeCtx{parent: h.ctx, deadline: time.Now().Add(eff.Timeout)}
		}
		ctx = h.s.outcome
	} else if err := ctx.Err(); err != nil {
		f.Gone(err) // the caller went away before anything ran: not the store's failure
		return
	}
	a := &h.s.applied
	h.s.sent = time.Since(hostEpoch)
	var err error
	if eff.Held != nil {
		err = store.ApplyHeld(ctx, h.e.store, eff.Held, eff.Event, &h.e.cfg.Policy, a)
	} else {
		err = store.Apply(ctx, h.e.store, *scope, eff.Event, &h.e.cfg.Policy, a)
	}
	if h.observing {
		h.observeApply(eff, a, err)
	}
	if err != nil && !eff.Detached && h.ctx.Err() != nil {
		f.Gone(h.ctx.Err()) // gone while it was under way: nothing ran, and the store did not fail
		return
	}
	f.Applied(a, err)
}

// doScratch is what a Do fills as it goes, kept in a pool: its Flow (a
// kilobyte) and the Applied of every event, which a Do's stack would let
// escape to the heap (both are handed to the store), when the last apply
// was sent, and once the action ran, the context its outcome is written on.
type doScratch struct {
	flow    Flow
	applied store.Applied
	sent    time.Duration // since hostEpoch
	outcome *outcomeCtx
	obs     observed // kept only while a tracer or a logger observes
}

var scratchPool = sync.Pool{New: func() any { return new(doScratch) }}

// putScratch returns s to the pool holding nothing a request left: a
// pooled scratch must not keep a response or a scope alive.
func putScratch(s *doScratch) {
	if s.flow.Next().Kind == EffectAnswer && s.flow.Next().Attempt.Token == 0 {
		// Answered at the reserve (a replay, the hot path): every field of
		// applied is written again by the next Apply, and BeginIn clears
		// the flow's few, so only what could keep memory alive is cleared.
		r := &s.applied.Record
		r.Scope, r.Response, r.LastErrorCode = core.Scope{}, core.Response{}, ""
	} else {
		if s.outcome != nil {
			s.outcome.release() // stops its timer, if a store armed one: Do is over
		}
		*s = doScratch{}
	}
	scratchPool.Put(s)
}

// wait performs an EffectWait on the caller's context and reports it: the
// store's Wait for the record to change, for at most eff.Wait.
func (h *doHost) wait(f *Flow, eff *Effect, scope *Scope) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(h.ctx, eff.Wait)
	_ = h.e.store.Wait(ctx, *scope, eff.Version, eff.Token) // woken, timed out, or spurious: the flow loads again
	cancel()
	if h.observing {
		h.s.obs.storeCall(StoreCall{Method: store.MethodWait, Elapsed: time.Since(start)}, false)
	}
	if err := h.ctx.Err(); err != nil {
		f.Gone(err)
		return
	}
	f.Waited(time.Since(start))
}

// run performs an EffectRun: action as the attempt, with the attempt's
// Lease kept beside it by a heart that cancels the action's context when
// the lease is lost. A panic comes back as a *PanicError, for the Flow to
// record before Do raises it again.
func (h *doHost) run(f *Flow, scope *Scope, action Action) (resp Response, err error) {
	actx, cancel := context.WithCancelCause(h.ctx)
	b := h.e.startHeartbeat(*scope, f.Lease(hostEpoch.Add(h.s.sent)), cancel)
	defer func() {
		b.stop()
		cancel(nil)
		if r := recover(); r != nil {
			resp, err = Response{}, &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return action(actx, f.Next().Attempt)
}
