package flow

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// EffectKind is what a Flow needs its host to do next.
type EffectKind uint8

const (
	// EffectApply: apply Effect.Event to the request's scope under the
	// executor's policy, then call Applied. With Effect.Held set, through
	// store.ApplyHeld over that record; else through store.Apply (or a
	// store.Op step by step). With Effect.Detached, on a context the
	// caller's cancellation does not reach, bounded by Effect.Timeout;
	// else on the caller's context, and if that context ends before or
	// during the call, report Gone instead of Applied.
	EffectApply EffectKind = iota + 1
	// EffectRun: run the action as Effect.Attempt on the caller's context,
	// with the attempt's Lease (Flow.Lease) kept beside it, then call
	// Ran. A panic is reported as a *PanicError.
	EffectRun
	// EffectWait: wait on the caller's context until the record no longer
	// has Effect.Version and Effect.Token (Store.Wait), or Effect.Wait has
	// passed, then call Waited; if the caller's context ends first,
	// report Gone.
	EffectWait
	// EffectAnswer: the flow is over; Result holds the answer. With
	// Effect.Panic set, the action panicked: its key is recorded unknown,
	// and the host raises the panic again with that value.
	EffectAnswer
)

func (k EffectKind) String() string {
	switch k {
	case EffectApply:
		return "apply"
	case EffectRun:
		return "run"
	case EffectWait:
		return "wait"
	case EffectAnswer:
		return "answer"
	}
	return "effect(" + strconv.Itoa(int(k)) + ")"
}

// Effect is one thing a Flow asks of its host. Only the fields its Kind
// names mean anything.
type Effect struct {
	Kind EffectKind

	// EffectApply.
	Event core.Event // Now and the fresh token come from the store
	// Held is the record the attempt's own reserve left, for an event of
	// that attempt (its outcome): a store that implements
	// store.HeldApplier writes over it without loading it first.
	Held *core.Record
	// Detached: the attempt's outcome, which the caller's cancellation
	// must not stop (a client that goes away must not turn a charge into
	// an unknown); Timeout bounds it.
	Detached bool
	Timeout  time.Duration

	// EffectRun.
	Attempt Attempt

	// EffectWait.
	Version uint64
	Token   Token
	Wait    time.Duration

	// EffectAnswer: the value the action panicked with, nil if it did not.
	Panic any
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
// no goroutine, clock or I/O of its own (as raft's RawNode sits under
// Node): Next says what to do, the host performs it and reports what
// happened (Applied, Ran, Waited, Gone), Done says it is over, and
// Result reads the answer. While the action runs, the attempt's Lease
// says when to extend it and when the action must be told it is lost.
// idem's Executor.Do is a host of these calls and of nothing else (it is
// in another package: it cannot reach past them); the simulator is another, on virtual time, so that what it checks is the sequence a
// service runs. Times come from the store (store.Applied.Now), so the
// in-flight wait is measured on the store's clock. A Flow counts the
// metrics of every event it is told about.
type Flow struct {
	cfg *Config // its policy, metrics, heartbeat interval and outcome timeout
	req Request

	state    flowState
	eff      Effect        // what Next returns
	deadline time.Time     // end of the in-flight wait on the store's clock, once started
	waited   time.Duration // time the host reports having waited
	// ran: the flow got past its reserve (an attempt ran, or met another
	// one's), so that a Flow used again has more than the reserve's
	// fields to clear.
	ran        bool
	held       core.Record // the attempt's record from its reserve (Effect.Held)
	reservedAt time.Time   // the store's time at the attempt's reserve
	response   Response    // what the action returned
	actErr     error       // the action's error
	finalErr   error       // the error to return once the outcome is recorded
	panicked   any         // what the action panicked with

	result Result
	err    error
}

// Begin starts req as a Flow under c, for a host that performs its
// effects itself. It refuses an invalid request. c must have been filled
// (Config.Fill) and must not change while the Flow runs.
func (c *Config) Begin(req Request) (*Flow, error) {
	f := new(Flow)
	if err := c.BeginIn(f, req); err != nil {
		return nil, err
	}
	return f, nil
}

// BeginIn starts req in f, a Flow the host made or used before (Do keeps
// its Flows in a pool): whatever f held is dropped. It refuses an invalid
// request, as Begin does.
func (c *Config) BeginIn(f *Flow, req Request) error { return f.begin(c, &req) }

// begin is BeginIn, with req by reference: BeginIn inlines into its
// caller, so that a request is copied once, into the Flow.
func (f *Flow) begin(c *Config, req *Request) error {
	if err := req.Validate(&c.Policy); err != nil {
		return err
	}
	f.reset()
	f.cfg, f.req = c, *req
	f.eff.Kind, f.eff.Event.Kind, f.eff.Event.Fingerprint = EffectApply, core.EventReserve, req.Fingerprint
	return nil
}

// reset clears f for another request. A flow that ended at its reserve
// (a replay, most often) touched only the fields cleared one by one here:
// the whole Flow, a kilobyte, would cost a replay a tenth of its time.
func (f *Flow) reset() {
	if f.ran {
		*f = Flow{}
		return
	}
	// Of the Effect only its Kind changed (to EffectAnswer): the reserve's
	// event went to the store by value, and nothing else is set before an
	// attempt runs or waits. The result is written whole when the flow
	// ends, and read only once it has.
	f.state = flowReserve
}

// Next is what the host must do now: a view into f, valid until the next
// report, which the host must not change.
func (f *Flow) Next() *Effect { return &f.eff }

// Done reports whether the flow is over and Result holds its answer.
func (f *Flow) Done() bool { return f.state == flowDone }

// Result is the answer once Done: a Result, or an *Error. Before, it is
// an error that says so.
func (f *Flow) Result() (Result, error) {
	if f.state != flowDone {
		return Result{}, errFlowNotDone
	}
	return f.result, f.err
}

var errFlowNotDone = errors.New("idem: Flow.Result before the flow is done")

func (f *Flow) finish(r Result, err error) {
	f.result, f.err = r, err
	f.end()
}

// end makes the flow Done, with f.result and f.err set.
func (f *Flow) end() {
	f.state, f.eff.Kind = flowDone, EffectAnswer
	if f.panicked != nil {
		f.eff.Panic = f.panicked
	}
}

// Applied reports how an EffectApply went: what it did, or an error (a
// *store.Error when the store failed). The Flow reads *a during the call
// only: the host may reuse it for the next event.
func (f *Flow) Applied(a *store.Applied, err error) {
	Count(f.cfg.Metrics, f.req.Scope.UseCase, f.eff.Event.Kind, a, err)
	switch f.state {
	case flowReserve:
		if err == nil && a.Transition.Decision.Kind == core.DecisionReplay {
			// The hot path (a retry of a settled key), in place: a Result
			// is large.
			if f.ran {
				f.waitEnded(core.DecisionReplay)
			}
			replayed(a, &f.result)
			f.err = nil
			f.end()
			return
		}
		f.reserved(a, err)
	case flowRecord:
		f.recorded(a, err)
	default:
		f.outOfStep("Applied")
	}
}

// Gone reports that the caller's context ended before or during an effect
// that runs on it (an EffectApply that is not Detached, or an EffectWait):
// err is the context's error. The flow ends. Before an attempt ran, the
// answer is err itself: the caller went away, which is not the store's
// failure (even if the reserve applied, nothing ran, and the key's lease
// runs out as after a crash). While it waited for another attempt, the
// answer is ErrInProgress wrapping err.
func (f *Flow) Gone(err error) {
	switch f.state {
	case flowReserve:
		f.finish(Result{}, err)
	case flowWait:
		f.finish(Result{}, f.inProgress(err, f.cfg.Policy.RetryAfter))
	default:
		f.outOfStep("Gone")
	}
}

// outOfStep ends the flow on a report its state does not expect.
func (f *Flow) outOfStep(report string) {
	f.finish(Result{}, errors.New("idem: Flow."+report+" in state "+strconv.Itoa(int(f.state))+": host out of step"))
}

func (f *Flow) reserved(a *store.Applied, err error) {
	if err != nil {
		// Fail closed: nothing runs when the store cannot be trusted,
		// including a write that may or may not have applied. A store that
		// refused the write for good is not down: retrying will not help.
		f.finish(Result{}, storeErr(err, f.cfg.Policy.RetryAfter))
		return
	}
	d := a.Transition.Decision
	if f.ran && d.Kind != core.DecisionInFlight {
		f.waitEnded(d.Kind)
	}
	switch d.Kind {
	case core.DecisionExecute:
		f.state, f.ran, f.held, f.reservedAt = flowRun, true, a.Record, a.Now
		f.eff.Kind = EffectRun
		f.eff.Attempt = Attempt{Scope: f.req.Scope, Token: d.Token, LockedUntil: a.Record.LockedUntil, policy: &f.cfg.Policy, metrics: f.cfg.Metrics,
			leaseLeft: a.Record.LockedUntil.Sub(a.Now)}
	case core.DecisionMismatch:
		f.finish(Result{}, newError(ErrKeyMisuse, &KeyMisuseError{Stored: a.Record.Fingerprint}, 0))
	case core.DecisionReconciling:
		f.finish(Result{}, newError(ErrOutcomeUnknown, nil, d.RetryAfter))
	case core.DecisionInFlight:
		f.inFlight(a, d)
	default:
		f.finish(Result{}, errors.New("idem: reserve answered "+d.Kind.String()))
	}
}

// replayed is the answer of a reserve the core decided Replay for. Its
// response is a copy: a Result is the caller's to keep and edit, while the
// store's record is shared by every replay of the key (a store hands out
// its own memory; see store.Store).
func replayed(a *store.Applied, r *Result) {
	r.Kind, r.Response, r.Token, r.Recorded = ResultReplayed, a.Record.Response.Clone(), a.Record.Token, true
}

func (f *Flow) inFlight(a *store.Applied, d core.Decision) {
	if f.deadline.IsZero() {
		// ran, whether it waits or not: a Flow used again must not keep
		// this request's deadline (BeginIn clears only a reserve's fields
		// otherwise), or its next request's wait would end at once.
		f.deadline, f.ran = a.Now.Add(f.cfg.Policy.InFlightWait), true
	}
	// Whichever clock says less is left wins: the store's (skew between
	// hosts does not matter) or the host's own (a store clock that does
	// not move, as a test's, must not make the wait endless).
	if remaining := min(f.deadline.Sub(a.Now), f.cfg.Policy.InFlightWait-f.waited); remaining > 0 {
		f.state = flowWait
		f.eff.Kind, f.eff.Version, f.eff.Token, f.eff.Wait = EffectWait, a.Record.Version, a.Record.Token, remaining
		return
	}
	f.waitEnded(core.DecisionInFlight)
	f.finish(Result{}, f.inProgress(nil, d.RetryAfter))
}

// waitEnded records the in-flight wait of a flow that met another attempt
// on its key, once the reserve after it decided d (in_flight: the wait ran
// out).
func (f *Flow) waitEnded(d core.DecisionKind) {
	if counting(f.cfg.Metrics) && !f.deadline.IsZero() {
		l := Labels{UseCase: f.req.Scope.UseCase, Event: core.EventReserve.String(), Decision: d.String()}
		Record(f.cfg.Metrics, HistogramInFlightWait, l, seconds(f.waited))
	}
}

// inProgress is the answer while another attempt holds the key: 409, or
// 202 by policy, with cause (the caller's context error, when it went
// away while waiting) and retryAfter.
func (f *Flow) inProgress(cause error, retryAfter time.Duration) *Error {
	e := newError(ErrInProgress, cause, retryAfter)
	if f.cfg.Policy.InFlightAnswer == core.InFlightAccepted {
		e.Status = statusAccepted
	}
	return e
}

// Waited reports that an EffectWait ended after elapsed (the record
// changed, the time passed, or spuriously): the Flow loads the record again.
func (f *Flow) Waited(elapsed time.Duration) {
	if f.state == flowWait {
		f.waited += max(elapsed, 0)
		f.state, f.eff.Kind = flowReserve, EffectApply
	}
}

// Ran reports what the action returned: a response (whatever its
// status: a declined card is an outcome too), or an error.
func (f *Flow) Ran(resp Response, err error) {
	if f.state != flowRun {
		f.outOfStep("Ran")
		return
	}
	f.response, f.actErr = resp, err
	if p, ok := err.(*PanicError); ok {
		f.panicked = p.Value // raised again once the outcome is written
	}
	f.state = flowRecord
	f.eff = Effect{Kind: EffectApply, Held: &f.held, Detached: true, Timeout: f.cfg.OutcomeTimeout,
		Event: core.Event{Kind: core.EventMarkUnknown, Token: f.eff.Attempt.Token}, Attempt: f.eff.Attempt}
	ev := &f.eff.Event
	if err == nil {
		ev.Kind, ev.Response = core.EventComplete, resp
		return
	}
	if notExecuted, ok := find[*NotExecutedError](err); ok {
		ev.Kind, ev.ErrorCode = core.EventFail, notExecuted.Code
		f.finalErr = newError(ErrNotExecuted, err, 0)
		if codeErr := core.ValidateErrorCode(notExecuted.Code); codeErr != nil {
			// That nothing ran is what frees the key; a code the core
			// refuses must not keep it locked. The default code is
			// stored, and the caller is told of its mistake.
			ev.ErrorCode = ""
			f.finalErr = newError(ErrNotExecuted, &codeRefusedError{notExecuted: err, refusal: codeErr}, 0)
		}
		return
	}
	ev.ErrorCode = unknownCode(err)
	f.finalErr = newError(ErrOutcomeUnknown, err, f.cfg.Policy.RetryAfter)
}

func unknownCode(err error) ErrorCode {
	switch _, panicked := find[*PanicError](err); {
	case panicked:
		return "action_panic"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "action_error"
}

func (f *Flow) recorded(a *store.Applied, err error) {
	kind := f.eff.Event.Kind
	outcome := kind == core.EventComplete || kind == core.EventFail
	if err == nil && counting(f.cfg.Metrics) {
		recordOutcome(f.cfg.Metrics, f.req.Scope.UseCase, kind, f.reservedAt, a)
	}
	switch {
	case err != nil && store.BadInput(err) && kind == core.EventComplete:
		// The core refused the response (not valid HTTP, or too large): it
		// executed, but what it answered cannot be replayed. Leave the key
		// to the reconciler and surface the bug.
		f.markUnknown(ErrorCodeResponseInvalid, newError(ErrResponseInvalid, err, 0))
		return
	case err != nil && errors.Is(err, store.ErrRejected) && outcome:
		// The store rejected the outcome for good: a write sent again would
		// be refused again, and the key would sit in_progress until its
		// lease ended. Hand it to the reconciler now. A completion's
		// response is still the true one (Result.Recorded false); a
		// failure's key is not free, which the caller is told.
		var final error
		if kind == core.EventFail {
			final = newError(ErrStoreRejected, &notReleasedError{notExecuted: f.actErr, write: err}, 0)
		}
		f.markUnknown(ErrorCodeStoreRejected, final)
		return
	}
	if kind == core.EventFail && !released(a, err) {
		// It did not execute, but the key is not free: say so, not that a
		// retry may run it.
		f.finish(Result{}, storeErr(&notReleasedError{notExecuted: f.actErr, write: err}, f.cfg.Policy.RetryAfter))
		return
	}
	if f.finalErr != nil {
		f.finish(Result{}, f.finalErr)
		return
	}
	r := Result{Kind: ResultExecuted, Response: f.response, Token: f.eff.Attempt.Token}
	if err == nil {
		k := a.Transition.Decision.Kind
		r.Recorded = k == core.DecisionCompleted || k == core.DecisionAcknowledged
	}
	f.finish(r, nil)
}

// markUnknown makes the attempt's next event a MarkUnknown with code, and
// final what the flow answers once it is written (nil: the executed
// result, not recorded).
func (f *Flow) markUnknown(code ErrorCode, final error) {
	f.eff.Event = core.Event{Kind: core.EventMarkUnknown, Token: f.eff.Attempt.Token, ErrorCode: code}
	f.finalErr = final
}

// ErrorCodeStoreRejected is the last error code of a record whose outcome
// the store rejected (store.ErrRejected), or whose reconciler's finding it
// rejected: either way the record is left to the reconciler.
const ErrorCodeStoreRejected ErrorCode = "store_rejected"

// ErrorCodeResponseInvalid is the last error code of a record whose action
// answered a response the core refuses (ErrResponseInvalid).
const ErrorCodeResponseInvalid ErrorCode = "response_invalid"

// storeErr is the answer to a store failure: ErrStoreRejected when the store
// rejected the write for good (store.ErrRejected), else ErrStoreUnavailable
// with retryAfter.
func storeErr(err error, retryAfter time.Duration) *Error {
	if errors.Is(err, store.ErrRejected) {
		return newError(ErrStoreRejected, err, 0)
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
