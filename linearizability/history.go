package linearizability

import (
	"fmt"
	"math"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Pending is the return time porcupine is given for an operation that ended
// indeterminate: "never returned", as porcupine's etcd test models a
// call without a response. The operation may then take effect at any point
// after its call, or never (it is linearized last, where nothing observes it).
const Pending int64 = math.MaxInt64

// Ending is how one checked call ended: what its caller learned about its
// effect. (Not an outcome: in idem that word is the response of an attempt
// that executed.)
type Ending uint8

const (
	// EndedOK: the call returned normally. A write was applied; a load
	// read what Record and FreshToken say.
	EndedOK Ending = iota + 1
	// EndedConflict: a write's precondition did not hold
	// (store.ErrConflict), so nothing was written. Store operations only.
	EndedConflict
	// EndedFailed: the call failed and is known to have had no effect: a
	// load that failed, a write refused before it was sent, an event the core
	// refused, or an event that lost every compare-and-set race.
	EndedFailed
	// EndedIndeterminate: the call failed in a way that leaves its effect
	// unknown, as Jepsen calls it (a store error or a context deadline after
	// the write may have been sent: an ambiguous commit). It is checked as
	// ambiguous: it may have taken effect at any instant after its call,
	// even after it returned, or never.
	EndedIndeterminate
	endingEnd
)

var endingNames = [endingEnd]string{"invalid", "ok", "conflict", "failed", "indeterminate"}

func (e Ending) String() string {
	if e < endingEnd {
		return endingNames[e]
	}
	return fmt.Sprintf("ending(%d)", uint8(e))
}

// StoreOperation is one call of a store.Store method on one scope, as its
// caller saw it. A Recorder fills these from a live store; the simulator
// fills them from its own event log, on its virtual clock.
//
// Due and Wait are not operations of the model: Due is a hint that callers
// check by loading again, and Wait may return spuriously.
type StoreOperation struct {
	// Client names the caller, from 0: one row of the visualization.
	Client int
	// Call and Return are when the call was made and when it returned, in
	// nanoseconds on one monotonic clock (or the simulator's virtual clock).
	// The interval is closed. Return is ignored for EndedIndeterminate: an
	// ambiguous write may take effect after its caller gave up.
	Call, Return int64
	// Kind is the method called: MethodLoad, MethodInsert,
	// MethodCompareAndSet or MethodDelete.
	Kind store.Method
	// Scope is the scope the call was about; for Insert and CompareAndSet it
	// must equal Record.Scope.
	Scope core.Scope
	// Record is the record written (Insert, CompareAndSet), or the record
	// read (Load with EndedOK; Record{Scope: s} when there was none).
	Record core.Record
	// ExpectVersion and ExpectToken are the precondition of CompareAndSet
	// and Delete.
	ExpectVersion uint64
	ExpectToken   core.Token
	// FreshToken is the Snapshot's fresh token (Load with EndedOK).
	FreshToken core.Token
	Ended      Ending
}

// LifecycleOperation is one event applied to one scope (store.Apply, an
// Applier's Apply, or the simulator's Op), as its caller saw it.
//
// With EndedOK the check replays Event on the model's record with
// core.Step and requires exactly Before, Transition and Record. With
// EndedIndeterminate and WriteKnown, the write Transition.Write (with its
// precondition) of Record may have applied, at any instant after Call, or
// never. With EndedIndeterminate and no known write (an Applier's Apply failed,
// so neither the store's time nor the write is known), the scope's record is
// unknown to the model until the next operation that observed it: that
// operation's Record is taken as the truth, unchecked.
type LifecycleOperation struct {
	Client       int
	Call, Return int64
	Scope        core.Scope
	// Event is the event as applied: Now is the store's time it was applied
	// at (Applied.Now). For Reserve, Token is the fresh token the store
	// handed out when known (it always is with Decision Execute), else zero;
	// a zero token stands for "some fresh token".
	Event core.Event
	Ended Ending // EndedOK, EndedFailed or EndedIndeterminate
	// Before is the record's status before the event (EndedOK).
	Before core.Status
	// Transition is the core's decision and write (EndedOK), or the write that
	// may have applied (EndedIndeterminate with WriteKnown).
	Transition core.Transition
	// Record is the record after the event, as the store then held it
	// (EndedOK), or the record the ambiguous write carried (WriteKnown).
	Record     core.Record
	WriteKnown bool
}
