package chaos

import (
	"fmt"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
)

// A write is acknowledged when the call that made it returned success. A
// later call, one that began after that, must see it or what came after
// it: in a store that never deletes (the run's policy never does), a
// record's version only grows, and a version is one state of the record.
// A call that sees a lower version, or the same version in another state,
// shows that the store lost the write. So does one that shows a state a
// reader was given (a replay, an answer in flight) and that a later call
// no longer sees: the reader acted on it. This finds a loss only when a
// later call looks, and not one that later writes hid before anyone looked
// (a lost heartbeat, written again alike): it may count too few, never too
// many.

// state is what a call saw of a record, or left it as.
type state struct {
	version uint64
	token   core.Token
	status  core.Status
}

func stateOf(rec *core.Record) state {
	if !rec.Exists() {
		return state{}
	}
	return state{rec.Version, rec.Token, rec.Status}
}

// hides reports whether a call that saw o cannot have come after s.
func (o state) hides(s state) bool {
	return o.version < s.version || o.version == s.version && o != s
}

// lost is one acknowledged state a later call no longer saw.
type lost struct {
	scope        core.Scope
	state        state
	acked        bool  // acknowledged to its writer (else only shown to a reader)
	call, detect int64 // when the first call that had it began; when the first that missed it returned
	crash        bool  // a crash happened in between
}

func (l lost) describe() string {
	how := "acknowledged to its writer"
	if !l.acked {
		how = "shown to a reader"
	}
	return fmt.Sprintf("version %d (%v, token %d) %s at %v, gone at %v", l.state.version, l.state.status, l.state.token, how,
		time.Duration(l.call).Round(time.Millisecond), time.Duration(l.detect).Round(time.Millisecond))
}

// span is a crash: from before the kill to after it, on the run's clock.
type span struct{ from, to int64 }

// known is what the calls on one scope acknowledged, and what they saw.
type known struct {
	entries map[state]*entry
	seen    []sight
	deleted bool // a delete: versions start again, and this check cannot tell
}

type entry struct {
	call, ret int64 // the earliest call that had the state: its call, its return
	acked     bool
}

// sight is what one call found.
type sight struct {
	call, ret int64
	found     state
}

// findLost lists the states acknowledged in life that a later call no
// longer saw, each traced to a crash when one happened between the first
// call that had it and the first that missed it.
func findLost(life []linearizability.LifecycleOperation, crashes []span) []lost {
	by := map[core.Scope]*known{}
	for i := range life {
		op := &life[i]
		if op.Ended != linearizability.EndedOK {
			continue
		}
		k := by[op.Scope]
		if k == nil {
			k = &known{entries: map[state]*entry{}}
			by[op.Scope] = k
		}
		k.add(op)
	}
	var out []lost
	for sc, k := range by {
		if !k.deleted {
			out = append(out, k.lost(sc, crashes)...)
		}
	}
	return out
}

// add notes what op (which ended well) found and what it acknowledged.
func (k *known) add(op *linearizability.LifecycleOperation) {
	w := op.Transition.Write
	found := stateOf(&op.Record)
	switch w.Kind {
	case core.WriteInsert:
		found = state{}
	case core.WriteUpdate:
		found = state{w.ExpectVersion, w.ExpectToken, op.Before}
	case core.WriteDelete:
		k.deleted = true
		return
	}
	k.seen = append(k.seen, sight{op.Call, op.Return, found})
	if w.Kind != core.WriteNone {
		k.note(stateOf(&op.Record), op, true)
	} else if found != (state{}) {
		k.note(found, op, false)
	}
}

func (k *known) note(s state, op *linearizability.LifecycleOperation, acked bool) {
	e := k.entries[s]
	if e == nil {
		e = &entry{call: op.Call, ret: op.Return}
		k.entries[s] = e
	}
	if op.Return < e.ret {
		e.call, e.ret = op.Call, op.Return
	}
	e.acked = e.acked || acked
}

// lost lists the scope's acknowledged states that a call begun after their
// acknowledgement did not see.
func (k *known) lost(sc core.Scope, crashes []span) []lost {
	var out []lost
	for s, e := range k.entries {
		detect := int64(-1)
		for _, o := range k.seen {
			if o.call > e.ret && o.found.hides(s) && (detect < 0 || o.ret < detect) {
				detect = o.ret
			}
		}
		if detect < 0 {
			continue
		}
		l := lost{scope: sc, state: s, acked: e.acked, call: e.call, detect: detect}
		for _, c := range crashes {
			l.crash = l.crash || c.from <= detect && c.to >= e.call
		}
		out = append(out, l)
	}
	return out
}
