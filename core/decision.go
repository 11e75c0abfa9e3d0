package core

import (
	"time"
)

// DecisionKind is the closed set of answers Step gives.
type DecisionKind uint8

const (
	DecisionInvalid DecisionKind = iota // never returned without an error

	// Answers to Reserve.
	DecisionExecute     // run the action now, carrying Decision.Token, until the record's LockedUntil
	DecisionReplay      // answer with the record's Response, byte for byte
	DecisionMismatch    // the key is live with another fingerprint (422)
	DecisionInFlight    // another attempt holds the lease: retry after Decision.RetryAfter (409 or 202)
	DecisionReconciling // an attempt may have executed; only the reconciler settles it (409 + Retry-After)

	// Answers to owner events (Complete, Fail, MarkUnknown, Heartbeat).
	DecisionCompleted     // the outcome is stored
	DecisionAcknowledged  // the same event was already applied; nothing to write
	DecisionFailed        // the record is failed_retryable, or deleted if the policy evicts
	DecisionMarkedUnknown // the record is unknown and scheduled for the reconciler
	DecisionExtended      // the lease is extended
	DecisionStale         // the token does not own the record: nothing changes
	DecisionConflict      // the token owns the record but its status forbids the event: nothing changes

	// Answers to Resolve.
	DecisionResolved      // the reconciler's finding is stored (completed or failed_retryable)
	DecisionRescheduled   // still unknown: the reconciler looks again after a backoff
	DecisionAbandoned     // still unknown after ReconcileAttemptsMax looks: left for an operator
	DecisionNotApplicable // the event does not apply to the record's status: nothing changes

	// Answers to Sweep.
	DecisionLeaseExpired // an in_progress record's lease ran out: it is now unknown
	DecisionExpired      // past its TTL: soft-expired or deleted, by policy
	DecisionNothingDue   // nothing to do yet
	DecisionPruned       // a tombstone past its retention: deleted

	// Answer to Evict (besides NotApplicable and Stale).
	DecisionEvicted // a settled record (or a tombstone) removed by hand: its key is free

	decisionCount
)

var decisionNames = [decisionCount]string{
	"invalid",
	"execute", "replay", "mismatch", "in_flight", "reconciling",
	"completed", "acknowledged", "failed", "marked_unknown", "extended", "stale", "conflict",
	"resolved", "rescheduled", "abandoned", "not_applicable",
	"lease_expired", "expired", "nothing_due", "pruned",
	"evicted",
}

func (k DecisionKind) String() string {
	if k < decisionCount {
		return decisionNames[k]
	}
	return sprintf("decision(%d)", uint8(k))
}

// Decision is what the caller of Step must tell its own caller. It holds no
// copy of the record: what a decision refers to (the response to replay, the
// end of a lease) is in the record Step left behind. That keeps Decision small
// and free of pointers, so that returning it costs next to nothing.
type Decision struct {
	Kind DecisionKind
	// Token is the fencing token the new owner must carry (Execute).
	Token Token
	// RetryAfter tells a client when to come back (InFlight, Reconciling),
	// or the reconciler when to look again (Rescheduled).
	RetryAfter time.Duration
}

// WriteKind is what a driver must do to make Step's result durable.
type WriteKind uint8

const (
	WriteNone   WriteKind = iota // nothing changed
	WriteInsert                  // insert the record Step left; fails if a record exists for the scope
	WriteUpdate                  // replace the record if it still has ExpectVersion and ExpectToken
	WriteDelete                  // delete the record if it still has ExpectVersion and ExpectToken
	writeCount
)

var writeNames = [writeCount]string{"none", "insert", "update", "delete"}

func (k WriteKind) String() string {
	if k < writeCount {
		return writeNames[k]
	}
	return sprintf("write(%d)", uint8(k))
}

// Write is the single store operation that makes a Step durable. Its
// precondition is the record Step was given: if the store no longer holds
// exactly that (Version, Token), the write must fail and the caller must
// load again and Step again.
type Write struct {
	Kind          WriteKind
	ExpectVersion uint64
	ExpectToken   Token
}

// Transition is what Step returns besides the record it changed in place.
type Transition struct {
	Decision Decision
	Write    Write
}
