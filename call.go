package idem

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemkit/idem/core"
)

// Request is what the executor needs of an incoming request.
type Request struct {
	Scope       Scope
	Fingerprint Fingerprint // of the semantic request fields (package fingerprint)
}

// Validate checks the scope and key (SPEC §3) and that a fingerprint is set.
func (r *Request) Validate(p *Policy) error {
	if err := r.Scope.Validate(p.KeyBytesMax); err != nil {
		if errors.Is(err, core.ErrInvalidKey) {
			return newError(ErrInvalidKey, err, 0)
		}
		return newError(ErrInvalidRequest, err, 0)
	}
	if r.Fingerprint.IsZero() {
		return newError(ErrInvalidRequest, core.ErrFingerprintMissing, 0)
	}
	return nil
}

// ResultKind says how a request was answered with a response.
type ResultKind uint8

const (
	ResultExecuted ResultKind = iota + 1 // the action ran for this request
	ResultReplayed                       // the stored outcome of an earlier execution
)

func (k ResultKind) String() string {
	switch k {
	case ResultExecuted:
		return "executed"
	case ResultReplayed:
		return "replayed"
	}
	return fmt.Sprintf("result(%d)", uint8(k))
}

// Result is a request answered with a response.
type Result struct {
	Kind     ResultKind
	Response Response
	// Token is the attempt's fencing token (Executed).
	Token Token
	// Recorded is false when the action executed but its outcome could not
	// be stored (the store failed, or the attempt lost its record to the
	// reconciler meanwhile). The response is still the true one and should
	// be sent; a retry is answered outcome_unknown until the reconciler
	// settles the key.
	Recorded bool
}

// Attempt is what an action is told about the attempt it runs as.
type Attempt struct {
	Scope Scope
	Token Token
	// LockedUntil is the end of the lease when the action started, on the
	// store's clock. Heartbeats extend it while the action runs; a downstream
	// call that can carry a deadline should not outlive it by much.
	LockedUntil time.Time

	policy  *Policy
	metrics Metrics
}

// CompleteIn records resp as this attempt's outcome through s. Pass a Store
// bound to your own database transaction (as store/pgx offers) and commit the
// business write and the completion together: then no crash can separate
// them. The executor's own completion after the action returns is a repeat
// and is acknowledged. Return the same response from the action.
func (a Attempt) CompleteIn(ctx context.Context, s Store, resp Response) error {
	applied, err := ApplyOver(ctx, s, a.policy, a.metrics, a.Scope, core.Event{Kind: core.EventComplete, Token: a.Token, Response: resp})
	if err != nil {
		return err
	}
	switch applied.Result.Decision.Kind {
	case core.DecisionCompleted, core.DecisionAcknowledged:
		return nil
	}
	return fmt.Errorf("idem: completion refused: %v", applied.Result.Decision.Kind)
}

// Outcome is what an action returned. Err nil means completed with
// Response (whatever its status code: a declined card is an outcome too).
type Outcome struct {
	Response Response
	Err      error
}

// EffectKind is what a Call needs its host to do next.
type EffectKind uint8

const (
	// EffectApply: apply Effect.Event to the request's scope (ApplyOver, or
	// an Op step by step), then call Applied.
	EffectApply EffectKind = iota + 1
	// EffectRun: run the action as Effect.Attempt, then call Ran.
	EffectRun
	// EffectWait: wait until the record no longer has Effect.Version and
	// Effect.Token (Store.Wait), or Effect.Wait has passed, then call Waited.
	EffectWait
	// EffectDone: Result holds the answer.
	EffectDone
)

func (k EffectKind) String() string {
	switch k {
	case EffectApply:
		return "apply"
	case EffectRun:
		return "run"
	case EffectWait:
		return "wait"
	case EffectDone:
		return "done"
	}
	return fmt.Sprintf("effect(%d)", uint8(k))
}

// Effect is one thing a Call asks of its host.
type Effect struct {
	Kind    EffectKind
	Event   core.Event // EffectApply; Now and the fresh token come from the store
	Attempt Attempt    // EffectRun
	Version uint64     // EffectWait
	Token   Token      // EffectWait
	Wait    time.Duration
}

type callState uint8

const (
	callReserve callState = iota
	callWait
	callRun
	callRecord
	callDone
)

// Call is one request's way through the executor as a state machine, with
// no goroutine, clock or I/O of its own (as raft's RawNode sits under Node):
// Next says what to do, and the host reports back with Applied, Ran or
// Waited. Executor.Do is a thin loop over it; the simulator drives it on
// virtual time. Times come from the store (Applied.Now), so the in-flight
// wait is measured on the store's clock.
type Call struct {
	policy  *Policy
	metrics Metrics
	req     Request

	state    callState
	event    core.Event    // the event to apply next
	deadline time.Time     // end of the in-flight wait on the store's clock, once started
	waited   time.Duration // time the host reports having waited
	attempt  Attempt
	wait     struct {
		version uint64
		token   Token
		d       time.Duration
	}
	outcome  Outcome
	finalErr error // the error to return once the outcome is recorded

	result Result
	err    error
}

func newCall(p *Policy, m Metrics, req Request) (*Call, error) {
	c := new(Call)
	if err := c.init(p, m, req); err != nil {
		return nil, err
	}
	return c, nil
}

// init makes c a new Call for req: newCall's work, on memory the caller
// owns (Do keeps its Call on its own stack).
func (c *Call) init(p *Policy, m Metrics, req Request) error {
	if err := req.Validate(p); err != nil {
		return err
	}
	*c = Call{
		policy:  p,
		metrics: m,
		req:     req,
		event:   core.Event{Kind: core.EventReserve, Fingerprint: req.Fingerprint},
	}
	return nil
}

// Next is what the host must do now. It does not change the Call.
func (c *Call) Next() Effect {
	switch c.state {
	case callReserve, callRecord:
		return Effect{Kind: EffectApply, Event: c.event}
	case callWait:
		return Effect{Kind: EffectWait, Version: c.wait.version, Token: c.wait.token, Wait: c.wait.d}
	case callRun:
		return Effect{Kind: EffectRun, Attempt: c.attempt}
	}
	return Effect{Kind: EffectDone}
}

// Result is the answer once Next is EffectDone: a Result, or an *Error.
func (c *Call) Result() (Result, error) { return c.result, c.err }

func (c *Call) done(r Result, err error) {
	c.state, c.result, c.err = callDone, r, err
}

// Applied reports the outcome of an EffectApply. The Call reads *a during
// the call only: the host may reuse it for the next event.
func (c *Call) Applied(a *Applied, err error) {
	switch c.state {
	case callReserve:
		c.reserved(a, err)
	case callRecord:
		c.recorded(a, err)
	default:
		c.done(Result{}, fmt.Errorf("idem: Call.Applied in state %d: host out of step", c.state))
	}
}

func (c *Call) reserved(a *Applied, err error) {
	if err != nil {
		// Fail closed: nothing runs when the store cannot be trusted,
		// including a write that may or may not have applied.
		c.done(Result{}, newError(ErrStoreUnavailable, err, c.policy.RetryAfter))
		return
	}
	d := a.Result.Decision
	switch d.Kind {
	case core.DecisionExecute:
		c.state = callRun
		c.attempt = Attempt{Scope: c.req.Scope, Token: d.Token, LockedUntil: a.Record.LockedUntil, policy: c.policy, metrics: c.metrics}
	case core.DecisionReplay:
		c.done(Result{Kind: ResultReplayed, Response: a.Record.Response, Recorded: true}, nil)
	case core.DecisionMismatch:
		c.done(Result{}, newError(ErrKeyMisuse, nil, 0))
	case core.DecisionReconciling:
		c.done(Result{}, newError(ErrOutcomeUnknown, nil, d.RetryAfter))
	case core.DecisionInFlight:
		if c.deadline.IsZero() {
			c.deadline = a.Now.Add(c.policy.InFlightWait)
		}
		// Whichever clock says less is left wins: the store's (skew between
		// hosts does not matter) or the host's own (a store clock that does
		// not move, as a test's, must not make the wait endless).
		if remaining := min(c.deadline.Sub(a.Now), c.policy.InFlightWait-c.waited); remaining > 0 {
			c.state = callWait
			c.wait.version, c.wait.token, c.wait.d = a.Record.Version, a.Record.Token, remaining
			return
		}
		e := newError(ErrInProgress, nil, d.RetryAfter)
		if c.policy.InFlightAnswer == core.InFlightAccepted {
			e.Status = http.StatusAccepted
		}
		c.done(Result{}, e)
	default:
		c.done(Result{}, fmt.Errorf("idem: reserve answered %v", d.Kind))
	}
}

// Waited reports that an EffectWait ended after elapsed (the record changed,
// the time passed, or spuriously): the Call loads the record again.
func (c *Call) Waited(elapsed time.Duration) {
	if c.state == callWait {
		c.waited += max(elapsed, 0)
		c.state = callReserve
	}
}

// Ran reports what the action returned.
func (c *Call) Ran(out Outcome) {
	if c.state != callRun {
		c.done(Result{}, fmt.Errorf("idem: Call.Ran in state %d: host out of step", c.state))
		return
	}
	c.outcome = out
	c.state = callRecord
	c.event = core.Event{Kind: core.EventMarkUnknown, Token: c.attempt.Token}
	var notExecuted *NotExecutedError
	switch {
	case out.Err == nil:
		c.event.Kind, c.event.Response = core.EventComplete, out.Response
	case errors.As(out.Err, &notExecuted):
		c.event.Kind, c.event.ErrorCode = core.EventFail, notExecuted.Code
		c.finalErr = newError(ErrNotExecuted, out.Err, 0)
	default:
		c.event.ErrorCode = unknownCode(out.Err)
		c.finalErr = newError(ErrOutcomeUnknown, out.Err, c.policy.RetryAfter)
	}
}

func unknownCode(err error) string {
	var p *PanicError
	switch {
	case errors.As(err, &p):
		return "action_panic"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "action_error"
}

func (c *Call) recorded(a *Applied, err error) {
	if err != nil && isCoreError(err) && c.event.Kind == core.EventComplete {
		// The core refused the response (too large): record unknown instead.
		c.event = core.Event{Kind: core.EventMarkUnknown, Token: c.attempt.Token, ErrorCode: string(CodeResponseInvalid)}
		c.finalErr = newError(ErrResponseInvalid, err, 0)
		return
	}
	if c.finalErr != nil {
		c.done(Result{}, c.finalErr)
		return
	}
	r := Result{Kind: ResultExecuted, Response: c.outcome.Response, Token: c.attempt.Token}
	if err == nil {
		k := a.Result.Decision.Kind
		r.Recorded = k == core.DecisionCompleted || k == core.DecisionAcknowledged
	}
	c.done(r, nil)
}
