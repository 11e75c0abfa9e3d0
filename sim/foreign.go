package sim

import (
	"context"
	"errors"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// A foreign host is a host of the core in another runtime (the wasm core
// under Node.js, say): it has no validation of its own, only the core's
// refusals (SPEC §5: "Step refuses a scope that is not one"; "what a driver
// cannot store, the core refuses before anything runs"). Under
// FaultBadInput the world has one send what the executor refused, and bad
// error codes, straight to the store, whose Step must reject them and
// write nothing. It steps the store directly (the memory store, or a
// live run's own): its probes are
// refused, or answered Stale, so they never change the world, and one
// that were taken is a violation at once.

// foreignToken is a token no store hands out: a foreign host's events
// about a record never own it.
const foreignToken = core.Token(1<<64 - 1)

// foreignReserve has a foreign host reserve scope, whose key the executor
// refused, for fp.
func (w *world) foreignReserve(scope core.Scope, fp core.Fingerprint) {
	var a store.Applied
	err := store.Apply(context.Background(), w.store.inner, scope, core.Event{Kind: core.EventReserve, Fingerprint: fp}, &w.policy, &a)
	w.check.foreignAnswered(-1, core.EventReserve, scope.Key, "", err)
}

// foreignCode has a foreign host apply to scope (index i) an owner event
// or a finding carrying an error code drawn among the edges, with a token
// that does not own the record.
func (w *world) foreignCode(i int32) {
	r := w.rng.servers
	codes := append(goodCodes[1:len(goodCodes):len(goodCodes)], badCodes...)
	code := codes[r.IntN(len(codes))]
	ev := core.Event{Kind: []core.EventKind{core.EventFail, core.EventMarkUnknown, core.EventResolve}[r.IntN(3)], Token: foreignToken, ErrorCode: core.ErrorCode(code)}
	if ev.Kind == core.EventResolve {
		ev.Verdict = core.VerdictStillUnknown
	}
	var a store.Applied
	err := store.Apply(context.Background(), w.store.inner, w.scopes[i], ev, &w.policy, &a)
	w.check.foreignAnswered(i, ev.Kind, "", code, err)
}

// foreignAnswered holds a foreign host's probe to the checker's rules
// (invariant 9): a key or an error code the rules refuse is refused, with
// the core's error for it; one they take is not refused (a stale token
// makes the event change nothing).
func (c *checker) foreignAnswered(scope int32, ev core.EventKind, key, code string, err error) {
	switch {
	case key != "" && !errors.Is(err, core.ErrInvalidKey):
		c.fail(invBadInput, scope, "a foreign host's %v of the key %q was answered %v, not the core's refusal of the key", ev, key, err)
	case key != "":
	case !codeTakeable(code) && !errors.Is(err, core.ErrInvalidErrorCode):
		c.fail(invBadInput, scope, "a foreign host's %v with the error code %q was answered %v, not the core's refusal of the code", ev, code, err)
	case codeTakeable(code) && err != nil:
		c.fail(invBadInput, scope, "a foreign host's %v with the error code %q (a token of %d bytes) was refused: %v", ev, code, len(code), err)
	}
}
