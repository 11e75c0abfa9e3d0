package idem

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// EffectKind is what a Flow needs its host to do next.
type EffectKind uint8

const (
	// EffectApply: apply Effect.Event to the request's scope (store.Apply,
	// or a store.Op step by step), then call ApplyDone.
	EffectApply EffectKind = iota + 1
	// EffectRun: run the action as Effect.Attempt, then call RunDone.
	EffectRun
	// EffectWait: wait until the record no longer has Effect.Version and
	// Effect.Token (Store.Wait), or Effect.Wait has passed, then call WaitDone.
	EffectWait
	// EffectDone: the flow is over; Result holds the answer.
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

// Effect is one thing a Flow asks of its host.
type Effect struct {
	Kind    EffectKind
	Event   core.Event // EffectApply; Now and the fresh token come from the store
	Attempt Attempt    // EffectRun
	Version uint64     // EffectWait
	Token   Token      // EffectWait
	Wait    time.Duration
}

type flowState uint8

const (
	flowReserve flowState = iota
	flowWait
	flowRun
	flowRecord
	flowDone
)

// Flow is one request's way through the executor as a state machine, with
// no goroutine, clock or I/O of its own (as raft's RawNode sits under Node),
// for hosts that perform the effects themselves (the simulator does, on
// virtual time). Its protocol is store.Op's: Next says what to do, the
// host reports what happened (ApplyDone, RunDone, WaitDone), Done says it
// is over, and Result reads the answer. Executor.Do is a thin loop over it.
// Times come from the store (store.Applied.Now), so the in-flight wait is
// measured on the store's clock. A Flow counts the metrics of every event it
// is told about.
type Flow struct {
	policy  *Policy
	metrics Metrics
	req     Request

	state    flowState
	event    core.Event    // the event to apply next
	deadline time.Time     // end of the in-flight wait on the store's clock, once started
	waited   time.Duration // time the host reports having waited
	attempt  Attempt
	wait     struct {
		version uint64
		token   Token
		d       time.Duration
	}
	response Response // what the action returned
	actErr   error    // the action's error
	finalErr error    // the error to return once the outcome is recorded

	result Result
	err    error
}

// init makes a zero f a new Flow for req, on memory the caller owns (Do
// keeps its Flow on its own stack). Field by field: f is already zero, and
// a whole-struct literal would build and copy 800 bytes.
func (f *Flow) init(p *Policy, m Metrics, req *Request) error {
	if err := req.Validate(p); err != nil {
		return err
	}
	f.start(p, m, req)
	return nil
}

// start is init for a request already validated.
func (f *Flow) start(p *Policy, m Metrics, req *Request) {
	f.policy, f.metrics, f.req = p, m, *req
	f.event.Kind, f.event.Fingerprint = core.EventReserve, req.Fingerprint
}

// nextKind is Next().Kind, without building the Effect.
func (f *Flow) nextKind() EffectKind {
	switch f.state {
	case flowReserve, flowRecord:
		return EffectApply
	case flowWait:
		return EffectWait
	case flowRun:
		return EffectRun
	}
	return EffectDone
}

// Next is what the host must do now. It does not change the Flow.
func (f *Flow) Next() Effect {
	switch f.state {
	case flowReserve, flowRecord:
		return Effect{Kind: EffectApply, Event: f.event}
	case flowWait:
		return Effect{Kind: EffectWait, Version: f.wait.version, Token: f.wait.token, Wait: f.wait.d}
	case flowRun:
		return Effect{Kind: EffectRun, Attempt: f.attempt}
	}
	return Effect{Kind: EffectDone}
}

// Done reports whether the flow is over and Result holds its answer.
func (f *Flow) Done() bool { return f.state == flowDone }

// Result is the answer once Done: a Result, or an *Error.
func (f *Flow) Result() (Result, error) { return f.result, f.err }

func (f *Flow) done(r Result, err error) {
	f.state, f.result, f.err = flowDone, r, err
}

// ApplyDone reports how an EffectApply went: what it did, or an error (a
// *store.Error when the store failed). The Flow reads *a during the call
// only: the host may reuse it for the next event.
func (f *Flow) ApplyDone(a *store.Applied, err error) {
	count(f.metrics, f.req.Scope, f.event.Kind, a, err)
	switch f.state {
	case flowReserve:
		f.reserved(a, err)
	case flowRecord:
		f.recorded(a, err)
	default:
		f.done(Result{}, fmt.Errorf("idem: Flow.ApplyDone in state %d: host out of step", f.state))
	}
}

func (f *Flow) reserved(a *store.Applied, err error) {
	if err != nil {
		// Fail closed: nothing runs when the store cannot be trusted,
		// including a write that may or may not have applied. A store that
		// refused the write for good is not down: retrying will not help.
		f.done(Result{}, storeErr(err, f.policy.RetryAfter))
		return
	}
	d := a.Transition.Decision
	switch d.Kind {
	case core.DecisionExecute:
		f.state = flowRun
		f.attempt = Attempt{Scope: f.req.Scope, Token: d.Token, LockedUntil: a.Record.LockedUntil, policy: f.policy, metrics: f.metrics,
			leaseLeft: a.Record.LockedUntil.Sub(a.Now)}
	case core.DecisionReplay:
		f.done(replayed(a), nil)
	case core.DecisionMismatch:
		f.done(Result{}, newError(ErrKeyMisuse, &KeyMisuseError{Stored: a.Record.Fingerprint}, 0))
	case core.DecisionReconciling:
		f.done(Result{}, newError(ErrOutcomeUnknown, nil, d.RetryAfter))
	case core.DecisionInFlight:
		f.inFlight(a, d)
	default:
		f.done(Result{}, fmt.Errorf("idem: reserve answered %v", d.Kind))
	}
}

// replayed is the answer of a reserve the core decided Replay for. Its
// response is a copy: a Result is the caller's to keep and edit, while the
// store's record is shared by every replay of the key (a store hands out
// its own memory; see store.Store).
func replayed(a *store.Applied) Result {
	return Result{Kind: ResultReplayed, Response: a.Record.Response.Clone(), Token: a.Record.Token, Recorded: true}
}

func (f *Flow) inFlight(a *store.Applied, d core.Decision) {
	if f.deadline.IsZero() {
		f.deadline = a.Now.Add(f.policy.InFlightWait)
	}
	// Whichever clock says less is left wins: the store's (skew between
	// hosts does not matter) or the host's own (a store clock that does
	// not move, as a test's, must not make the wait endless).
	if remaining := min(f.deadline.Sub(a.Now), f.policy.InFlightWait-f.waited); remaining > 0 {
		f.state = flowWait
		f.wait.version, f.wait.token, f.wait.d = a.Record.Version, a.Record.Token, remaining
		return
	}
	e := newError(ErrInProgress, nil, d.RetryAfter)
	if f.policy.InFlightAnswer == core.InFlightAccepted {
		e.Status = http.StatusAccepted
	}
	f.done(Result{}, e)
}

// WaitDone reports that an EffectWait ended after elapsed (the record
// changed, the time passed, or spuriously): the Flow loads the record again.
func (f *Flow) WaitDone(elapsed time.Duration) {
	if f.state == flowWait {
		f.waited += max(elapsed, 0)
		f.state = flowReserve
	}
}

// RunDone reports what the action returned: a response (whatever its
// status: a declined card is an outcome too), or an error.
func (f *Flow) RunDone(resp Response, err error) {
	if f.state != flowRun {
		f.done(Result{}, fmt.Errorf("idem: Flow.RunDone in state %d: host out of step", f.state))
		return
	}
	f.response, f.actErr = resp, err
	f.state = flowRecord
	f.event = core.Event{Kind: core.EventMarkUnknown, Token: f.attempt.Token}
	if err == nil {
		f.event.Kind, f.event.Response = core.EventComplete, resp
		return
	}
	var notExecuted *NotExecutedError
	if errors.As(err, &notExecuted) {
		f.event.Kind, f.event.ErrorCode = core.EventFail, notExecuted.Code
		f.finalErr = newError(ErrNotExecuted, err, 0)
		if codeErr := core.ValidateErrorCode(notExecuted.Code); codeErr != nil {
			// That nothing ran is what frees the key; a code the core
			// refuses must not keep it locked. The default code is
			// stored, and the caller is told of its mistake.
			f.event.ErrorCode = ""
			f.finalErr = newError(ErrNotExecuted, &codeRefusedError{notExecuted: err, refusal: codeErr}, 0)
		}
		return
	}
	f.event.ErrorCode = unknownCode(err)
	f.finalErr = newError(ErrOutcomeUnknown, err, f.policy.RetryAfter)
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

func (f *Flow) recorded(a *store.Applied, err error) {
	outcome := f.event.Kind == core.EventComplete || f.event.Kind == core.EventFail
	switch {
	case err != nil && store.Refused(err) && f.event.Kind == core.EventComplete:
		// The core refused the response (not valid HTTP, or too large): it
		// executed, but what it answered cannot be replayed. Leave the key
		// to the reconciler and surface the bug.
		f.markUnknown(string(CodeResponseInvalid), newError(ErrResponseInvalid, err, 0))
		return
	case err != nil && errors.Is(err, store.ErrRefused) && outcome:
		// The store refused the outcome for good: a write sent again would
		// be refused again, and the key would sit in_progress until its
		// lease ended. Hand it to the reconciler now. A completion's
		// response is still the true one (Result.Recorded false); a
		// failure's key is not free, which the caller is told.
		var final error
		if f.event.Kind == core.EventFail {
			final = newError(ErrStoreRefused, &notReleasedError{notExecuted: f.actErr, write: err}, 0)
		}
		f.markUnknown(codeStoreRefused, final)
		return
	}
	if f.event.Kind == core.EventFail && !released(a, err) {
		// It did not execute, but the key is not free: say so, not that a
		// retry may run it.
		f.done(Result{}, storeErr(&notReleasedError{notExecuted: f.actErr, write: err}, f.policy.RetryAfter))
		return
	}
	if f.finalErr != nil {
		f.done(Result{}, f.finalErr)
		return
	}
	r := Result{Kind: ResultExecuted, Response: f.response, Token: f.attempt.Token}
	if err == nil {
		k := a.Transition.Decision.Kind
		r.Recorded = k == core.DecisionCompleted || k == core.DecisionAcknowledged
	}
	f.done(r, nil)
}

// markUnknown makes the attempt's next event a MarkUnknown with code, and
// final what the flow answers once it is written (nil: the executed
// result, not recorded).
func (f *Flow) markUnknown(code string, final error) {
	f.event = core.Event{Kind: core.EventMarkUnknown, Token: f.attempt.Token, ErrorCode: code}
	f.finalErr = final
}

// codeStoreRefused is the last error code of a record whose outcome the
// store refused to write (store.ErrRefused).
const codeStoreRefused = "store_refused"

// storeErr is the answer to a store failure: ErrStoreRefused when the store
// refused the write for good (store.ErrRefused), else ErrStoreUnavailable
// with retryAfter.
func storeErr(err error, retryAfter time.Duration) *Error {
	if errors.Is(err, store.ErrRefused) {
		return newError(ErrStoreRefused, err, 0)
	}
	return newError(ErrStoreUnavailable, err, retryAfter)
}

// codeRefusedError is the cause when an action proved it did nothing but
// gave an error code the core refuses (core.ValidateErrorCode): the key was
// released with the core's default code.
type codeRefusedError struct {
	notExecuted error // the action's error (a *NotExecutedError)
	refusal     error // the core's refusal of its code
}

func (e *codeRefusedError) Error() string {
	return e.notExecuted.Error() + " (its key was released, but its error code was refused and not stored: " + e.refusal.Error() + ")"
}

func (e *codeRefusedError) Unwrap() []error { return []error{e.notExecuted, e.refusal} }

// released reports whether a Fail freed the key.
func released(a *store.Applied, err error) bool {
	if err != nil {
		return false
	}
	k := a.Transition.Decision.Kind
	return k == core.DecisionFailed || k == core.DecisionAcknowledged
}

// notReleasedError is the cause when an action proved it did nothing but
// the key could not be released.
type notReleasedError struct {
	notExecuted error // the action's error (a *NotExecutedError), never an *Error: errors.Is(err, ErrNotExecuted) must stay false
	write       error // why the Fail was not written (nil: the record had passed to another attempt)
}

func (e *notReleasedError) Error() string {
	why := "the record had passed to another attempt"
	if e.write != nil {
		why = e.write.Error()
	}
	return "the action did not execute (" + e.notExecuted.Error() + "), but its key was not released (" + why +
		"): retries are answered in_progress, then outcome_unknown, until the reconciler frees it"
}

func (e *notReleasedError) Unwrap() []error { return []error{e.notExecuted, e.write} }

// HeartbeatEvent is the event that extends the running attempt's lease.
// A host that runs the action applies it now and then beside the action
// (a third of the lease is the executor's default), and reports each with
// HeartbeatDone.
func (f *Flow) HeartbeatEvent() core.Event {
	return core.Event{Kind: core.EventHeartbeat, Token: f.attempt.Token}
}

// HeartbeatDone reports how a heartbeat went and says whether the attempt
// still holds its lease. A store error leaves that open (the next beat may
// succeed); any other answer than Extended (stale, or no longer in
// progress) means the lease is lost for good: stop beating, and tell the
// action.
func (f *Flow) HeartbeatDone(a *store.Applied, err error) (held bool) {
	return heartbeatDone(f.metrics, f.req.Scope, a, err)
}
