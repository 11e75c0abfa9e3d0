package flow

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
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
	return "result(" + strconv.Itoa(int(k)) + ")"
}

// Result is a request answered with a response. It is the caller's: a
// replay's Response is a copy of what the store keeps, so that editing it
// (to add a header before sending it, say) changes no other replay.
type Result struct {
	Kind     ResultKind
	Response Response
	// Token is the fencing token of the attempt whose outcome this is: the
	// one that just ran (Executed), or the one that ran before (Replayed).
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

	policy    *Policy
	metrics   Metrics
	leaseLeft time.Duration // LockedUntil less the store's time at the reserve
}

// CompleteIn records resp as this attempt's outcome through s. Pass a Store
// bound to your own database transaction (as store/pgx offers) and commit the
// business write and the completion together: then no crash can separate
// them. The executor's own completion after the action returns is a repeat
// and is acknowledged. Return the same response from the action.
func (a Attempt) CompleteIn(ctx context.Context, s store.Store, resp Response) error {
	ev := core.Event{Kind: core.EventComplete, Token: a.Token, Response: resp}
	var applied store.Applied
	err := store.Apply(ctx, s, a.Scope, ev, a.policy, &applied)
	Count(a.metrics, a.Scope.UseCase, ev.Kind, &applied, err)
	if err != nil {
		return err
	}
	switch applied.Transition.Decision.Kind {
	case core.DecisionCompleted, core.DecisionAcknowledged:
		return nil
	}
	return errors.New("idem: completion refused: " + applied.Transition.Decision.Kind.String())
}
