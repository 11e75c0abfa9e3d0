package sim

import (
	"testing"

	"github.com/idemkit/idem/core"
)

// TestSweepCountRule: Sweeper.RunOnce answers how many records the run
// changed or deleted, no fewer (a drain-until-0 loop would stop early).
func TestSweepCountRule(t *testing.T) {
	w, _ := ruleWorld(t, 1)
	for _, c := range []struct {
		n, changed int
		want       int
	}{{3, 3, -1}, {0, 0, -1}, {2, 3, invExecutor}, {4, 3, invExecutor}} {
		w.sweepActor.changed = c.changed
		w.check.workerRan(w.sweepActor, c.n, nil)
		expect(t, w, c.want, "a sweep that answered its count")
	}
	w.reconcileActor.changed = 3
	w.check.workerRan(w.reconcileActor, 1, nil)
	expect(t, w, -1, "a reconciler's count is its settled records, not its writes")
}

// TestRejectedFindingRule: a finding the store rejected is rescheduled (a
// call about its record follows) in the run that found it.
func TestRejectedFindingRule(t *testing.T) {
	w, reqs := ruleWorld(t, 2)
	a := w.reconcileActor
	w.check.findingRejected(a, reqs[0].scope, 7)
	w.check.rescheduled(a, reqs[1].scope) // a call about another record
	w.check.workerRan(a, 0, nil)
	expect(t, w, invExecutor, "a refused finding never rescheduled")
	w.check.findingRejected(a, reqs[0].scope, 7)
	w.check.rescheduled(a, reqs[0].scope)
	w.check.workerRan(a, 0, nil)
	expect(t, w, -1, "a refused finding rescheduled")
}

// TestForeignHostRules: a foreign host's bad key or bad error code is
// refused with the core's error for it; a code the rules take (64 bytes
// of token characters) is not refused.
func TestForeignHostRules(t *testing.T) {
	w, _ := ruleWorld(t, 1)
	for _, c := range []struct {
		what      string
		key, code string
		err       error
		want      int
	}{
		{"a bad key refused", " key", "", core.ErrInvalidKey, -1},
		{"a bad key taken", " key", "", nil, invBadInput},
		{"a bad key refused for another reason", " key", "", core.ErrInvalidScope, invBadInput},
		{"a bad code refused", "", badCodes[1], core.ErrInvalidErrorCode, -1},
		{"a code a byte too long taken", "", badCodes[0], nil, invBadInput},
		{"a code of 64 bytes taken", "", goodCodes[2], nil, -1},
		{"a code of 64 bytes refused", "", goodCodes[2], core.ErrInvalidErrorCode, invBadInput},
	} {
		w.check.foreignAnswered(0, core.EventFail, c.key, c.code, c.err)
		expect(t, w, c.want, c.what)
	}
}
