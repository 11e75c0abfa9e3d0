package core

import (
	"math"
	"time"
)

// StepFunc is the signature of Step: the core's one entry point, as a value,
// so that a host can run another build of the same core (the wasm module,
// package wasmcore) in its place.
type StepFunc func(rec *Record, ev *Event, p *Policy) (Transition, error)

// Step is the one entry point of the lifecycle. Given the current record of a
// scope (Record{Scope: s} when the store has none), one event and the policy,
// it changes rec in place into the record after the event, and returns the
// decision and the write that makes the change durable. It reads no clock and
// performs no I/O, and it neither keeps nor modifies ev or p: the same inputs
// give the same outputs.
//
// Bad input (see errors.go) gives an error, a zero Transition and an unchanged
// rec; no (record, event) pair panics. Step works in place because records
// are large and Step sits on every request's path: copying them in and out
// would cost more than the whole transition.
func Step(rec *Record, ev *Event, p *Policy) (Transition, error) {
	if err := p.Validate(); err != nil {
		return Transition{}, err
	}
	// The scope is checked on every event, so that a host in any runtime
	// gets the refusals of the glossary without a validation of its own.
	// Only a reserve is held to the policy's KeyBytesMax: a record created
	// under a policy that allowed longer keys must still be swept, settled
	// and completed after the limit was lowered.
	keyBytesMax := KeyBytesMax
	if ev.Kind == EventReserve {
		keyBytesMax = p.KeyBytesMax
	}
	if err := rec.Scope.Validate(keyBytesMax); err != nil {
		return Transition{}, err
	}
	if err := rec.validate(); err != nil {
		return Transition{}, err
	}
	if ev.Now.IsZero() {
		return Transition{}, refuse(ErrTimeMissing, "%v event", ev.Kind)
	}
	// Records outlive processes: keep wall-clock time only, so that a
	// monotonic reading never decides a comparison against a stored time.
	now := ev.Now.Round(0)
	switch ev.Kind {
	case EventReserve:
		// Required even when the answer will not be Execute, so that a caller
		// that forgets it fails on its first request, not on its first new key.
		if ev.Token == 0 {
			return Transition{}, refuse(ErrTokenMissing, "reserve needs a fresh token from the store")
		}
		if ev.Fingerprint.IsZero() {
			return Transition{}, ErrFingerprintMissing
		}
		return reserve(rec, ev, p, now)
	case EventComplete, EventFail, EventMarkUnknown, EventHeartbeat, EventResolve, EventEvict:
		if ev.Token == 0 {
			return Transition{}, refuse(ErrTokenMissing, "%v needs the token of the attempt it is about", ev.Kind)
		}
	}
	if ev.carriesErrorCode() {
		if err := ValidateErrorCode(ev.ErrorCode); err != nil {
			return Transition{}, err
		}
	}
	switch ev.Kind {
	case EventComplete:
		return complete(rec, ev, p, now)
	case EventFail:
		return fail(rec, ev, p, now), nil
	case EventMarkUnknown:
		return markUnknown(rec, ev, now), nil
	case EventHeartbeat:
		return heartbeat(rec, ev, p, now), nil
	case EventResolve:
		return resolve(rec, ev, p, now)
	case EventSweep:
		return sweep(rec, p, now), nil
	case EventEvict:
		return evict(rec, ev), nil
	}
	return Transition{}, refuse(ErrUnknownEvent, "%v", ev.Kind)
}

// unchanged answers d and writes nothing.
func unchanged(d Decision) Transition { return Transition{Decision: d} }

// updated answers d for a record the caller has just changed in place, whose
// version and token before the change were version and token.
func updated(rec *Record, version uint64, token Token, d Decision) Transition {
	rec.Version = version + 1
	return Transition{Decision: d, Write: Write{Kind: WriteUpdate, ExpectVersion: version, ExpectToken: token}}
}

// removed answers d and makes rec absent. Not inlined: its record copy
// is large, and one copy of it keeps the wasm module under its cap.
//
//go:noinline
func removed(rec *Record, d Decision) Transition {
	w := Write{Kind: WriteDelete, ExpectVersion: rec.Version, ExpectToken: rec.Token}
	*rec = Record{Scope: rec.Scope}
	return Transition{Decision: d, Write: w}
}

func reserve(rec *Record, ev *Event, p *Policy, now time.Time) (Transition, error) {
	if !rec.live(now) {
		// A new incarnation of the key: absent, soft-expired, or past the TTL
		// of an outcome that is settled. The old fingerprint no longer binds.
		if err := checkFresh(rec, ev.Token); err != nil {
			return Transition{}, err
		}
		existed, version, token := rec.Exists(), rec.Version, rec.Token
		// Field by field rather than *rec = Record{...}: a whole-struct
		// store costs a typed copy with write barriers, more than the rest
		// of the transition.
		rec.Status = StatusInProgress
		rec.Fingerprint = ev.Fingerprint
		rec.Token = ev.Token
		if existed {
			rec.Response = Response{}
			rec.LastErrorCode = ""
			rec.ReconcileAfter = time.Time{}
			rec.ReconcileAttempts = 0
			rec.CompletedAt = time.Time{}
		}
		rec.LockedUntil = now.Add(p.LeaseDuration)
		rec.CreatedAt = now
		rec.ExpiresAt = now.Add(p.TTL)
		d := Decision{Kind: DecisionExecute, Token: ev.Token}
		if !existed {
			rec.Version = 1
			return Transition{Decision: d, Write: Write{Kind: WriteInsert}}, nil
		}
		return updated(rec, version, token, d), nil
	}
	if !ev.Fingerprint.same(&rec.Fingerprint) {
		return unchanged(Decision{Kind: DecisionMismatch}), nil
	}
	switch rec.Status {
	case StatusInProgress:
		if now.Before(rec.LockedUntil) {
			return unchanged(Decision{Kind: DecisionInFlight, RetryAfter: p.RetryAfter}), nil
		}
		// The owner's lease ran out without an outcome: it may have executed.
		// Never run again; hand the key to the reconciler.
		leaseExpired(rec, now)
		return updated(rec, rec.Version, rec.Token, Decision{Kind: DecisionReconciling, RetryAfter: p.RetryAfter}), nil
	case StatusCompleted:
		return unchanged(Decision{Kind: DecisionReplay}), nil
	case StatusFailedRetryable:
		if err := checkFresh(rec, ev.Token); err != nil {
			return Transition{}, err
		}
		version, token := rec.Version, rec.Token
		rec.Status = StatusInProgress
		rec.Token = ev.Token
		rec.LockedUntil = now.Add(p.LeaseDuration)
		rec.LastErrorCode = ""
		rec.ExpiresAt = now.Add(p.TTL)
		return updated(rec, version, token, Decision{Kind: DecisionExecute, Token: ev.Token}), nil
	default: // StatusUnknown: live() admits no other status
		retry := p.RetryAfter
		if !rec.ReconcileAfter.IsZero() {
			retry = max(retry, rec.ReconcileAfter.Sub(now))
		}
		return unchanged(Decision{Kind: DecisionReconciling, RetryAfter: retry}), nil
	}
}

func checkFresh(rec *Record, t Token) error {
	if rec.Exists() && t <= rec.Token {
		return refuse(ErrTokenNotFresh, "token %d, record already at %d", t, rec.Token)
	}
	return nil
}

// leaseExpired turns an in_progress record into an unknown one that the
// reconciler should look at now.
func leaseExpired(rec *Record, now time.Time) {
	rec.Status = StatusUnknown
	rec.LastErrorCode = ErrorCodeLeaseExpired
	rec.ReconcileAfter = now
	rec.ReconcileAttempts = 0
}

// owns reports whether token owns the record: an absent record and another
// attempt's record are not owned.
func owns(rec *Record, token Token) bool {
	return rec.Exists() && rec.Token == token
}

var stale = Transition{Decision: Decision{Kind: DecisionStale}}

func complete(rec *Record, ev *Event, p *Policy, now time.Time) (Transition, error) {
	if err := ev.Response.validate(p.ResponseBytesMax); err != nil {
		return Transition{}, err
	}
	if !owns(rec, ev.Token) {
		return stale, nil
	}
	switch rec.Status {
	case StatusInProgress, StatusUnknown:
		// Completing from unknown is the late owner reporting proof of
		// execution: better than anything the reconciler could find.
		completed(rec, now, p, &ev.Response)
		return updated(rec, rec.Version, rec.Token, Decision{Kind: DecisionCompleted}), nil
	case StatusCompleted:
		if rec.Response.Equal(ev.Response) {
			return unchanged(Decision{Kind: DecisionAcknowledged}), nil
		}
	}
	return unchanged(Decision{Kind: DecisionConflict}), nil
}

func completed(rec *Record, now time.Time, p *Policy, r *Response) {
	rec.Status = StatusCompleted
	rec.Response = *r
	rec.LastErrorCode = ""
	rec.LockedUntil = time.Time{}
	rec.ReconcileAfter = time.Time{}
	rec.CompletedAt = now
	rec.ExpiresAt = now.Add(p.TTL)
}

func failedRetryable(rec *Record, now time.Time, p *Policy, code ErrorCode) {
	rec.Status = StatusFailedRetryable
	rec.LastErrorCode = code
	rec.LockedUntil = time.Time{}
	rec.ReconcileAfter = time.Time{}
	rec.ExpiresAt = now.Add(p.TTL)
}

func fail(rec *Record, ev *Event, p *Policy, now time.Time) Transition {
	if !owns(rec, ev.Token) {
		return stale
	}
	switch rec.Status {
	case StatusInProgress, StatusUnknown:
		if p.Fail == FailEvict {
			return removed(rec, Decision{Kind: DecisionFailed})
		}
		code := ev.ErrorCode
		if code == "" {
			code = ErrorCodeNotExecuted
		}
		failedRetryable(rec, now, p, code)
		return updated(rec, rec.Version, rec.Token, Decision{Kind: DecisionFailed})
	case StatusFailedRetryable:
		return unchanged(Decision{Kind: DecisionAcknowledged})
	}
	return unchanged(Decision{Kind: DecisionConflict})
}

func markUnknown(rec *Record, ev *Event, now time.Time) Transition {
	if !owns(rec, ev.Token) {
		return stale
	}
	switch rec.Status {
	case StatusInProgress:
		leaseExpired(rec, now)
		rec.LastErrorCode = ev.ErrorCode
		if rec.LastErrorCode == "" {
			rec.LastErrorCode = ErrorCodeUnknown
		}
		// LockedUntil stays: it bounds when the attempt may still act, which
		// the reconciler needs before it may conclude "not executed".
		return updated(rec, rec.Version, rec.Token, Decision{Kind: DecisionMarkedUnknown})
	case StatusUnknown:
		return unchanged(Decision{Kind: DecisionAcknowledged})
	}
	return unchanged(Decision{Kind: DecisionConflict})
}

func heartbeat(rec *Record, ev *Event, p *Policy, now time.Time) Transition {
	if !owns(rec, ev.Token) {
		return stale
	}
	if rec.Status != StatusInProgress {
		return unchanged(Decision{Kind: DecisionConflict})
	}
	// A clock that stepped back must not shorten a lease others rely on.
	if until := now.Add(p.LeaseDuration); until.After(rec.LockedUntil) {
		rec.LockedUntil = until
	}
	return updated(rec, rec.Version, rec.Token, Decision{Kind: DecisionExtended})
}

func resolve(rec *Record, ev *Event, p *Policy, now time.Time) (Transition, error) {
	switch ev.Verdict {
	case VerdictExecuted:
		if err := ev.Response.validate(p.ResponseBytesMax); err != nil {
			return Transition{}, err
		}
	case VerdictNotExecuted, VerdictStillUnknown:
	default:
		return Transition{}, refuse(ErrUnknownVerdict, "%v", ev.Verdict)
	}
	if rec.Status != StatusUnknown {
		return unchanged(Decision{Kind: DecisionNotApplicable}), nil
	}
	if !owns(rec, ev.Token) {
		// The finding is about an earlier attempt than the one now unknown.
		return stale, nil
	}
	switch ev.Verdict {
	case VerdictExecuted:
		completed(rec, now, p, &ev.Response)
	case VerdictNotExecuted:
		failedRetryable(rec, now, p, ErrorCodeReconciled)
	default: // VerdictStillUnknown
		backoff := p.reconcileBackoff(rec.ReconcileAttempts)
		if rec.ReconcileAttempts < math.MaxUint32 { // saturates: a count that wrapped would reschedule a record given up
			rec.ReconcileAttempts++
		}
		if ev.ErrorCode != "" {
			rec.LastErrorCode = ev.ErrorCode // why the reconciler could not tell
		}
		if rec.ReconcileAttempts >= p.ReconcileAttemptsMax {
			rec.ReconcileAfter = time.Time{}
			return updated(rec, rec.Version, rec.Token, Decision{Kind: DecisionAbandoned}), nil
		}
		rec.ReconcileAfter = now.Add(backoff)
		return updated(rec, rec.Version, rec.Token, Decision{Kind: DecisionRescheduled, RetryAfter: backoff}), nil
	}
	return updated(rec, rec.Version, rec.Token, Decision{Kind: DecisionResolved}), nil
}

func sweep(rec *Record, p *Policy, now time.Time) Transition {
	switch rec.Status {
	case StatusInProgress:
		if !now.Before(rec.LockedUntil) {
			leaseExpired(rec, now)
			return updated(rec, rec.Version, rec.Token, Decision{Kind: DecisionLeaseExpired})
		}
	case StatusCompleted, StatusFailedRetryable:
		if !now.Before(rec.ExpiresAt) {
			if p.Expiry == ExpiryHard {
				return removed(rec, Decision{Kind: DecisionExpired})
			}
			// A tombstone keeps what detects key reuse and nothing else:
			// the response goes now, the rest after the retention.
			rec.Status = StatusExpired
			rec.Response = Response{}
			rec.LastErrorCode = ""
			rec.ExpiresAt = now.Add(p.TombstoneRetention)
			return updated(rec, rec.Version, rec.Token, Decision{Kind: DecisionExpired})
		}
	case StatusExpired:
		if !now.Before(rec.ExpiresAt) {
			return removed(rec, Decision{Kind: DecisionPruned})
		}
	}
	return unchanged(Decision{Kind: DecisionNothingDue})
}

// evict removes a settled record by hand (an operator's), fenced by its
// token: never one whose outcome is not known (in progress: an attempt may
// still run; unknown: the side effect may have happened, which only
// Resolve settles), so that an operator cannot free a key that could
// execute twice.
func evict(rec *Record, ev *Event) Transition {
	switch rec.Status {
	case StatusCompleted, StatusFailedRetryable, StatusExpired:
		if !owns(rec, ev.Token) {
			return stale
		}
		return removed(rec, Decision{Kind: DecisionEvicted})
	}
	return unchanged(Decision{Kind: DecisionNotApplicable})
}
