package sim

import (
	"fmt"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
)

// Violation is one broken invariant of SPEC §6.
type Violation struct {
	Invariant int
	Name      string
	Scope     string // the scope it happened in, "" for none
	At        int64  // virtual nanoseconds
	Detail    string
	Events    []string // the scope's events, in order
}

var invariantNames = [...]string{
	0: "store linearizability",
	1: "at most once",
	2: "replay fidelity",
	3: "no cross-payload",
	4: "fencing",
	5: "no zombie",
	6: "clients converge",
	7: "fail closed",
}

// checker holds a run to SPEC §6. It only observes: the store's writes, the
// gateway's ledger, every answer a client saw, and the end state. It injects
// nothing and decides nothing.
type checker struct {
	w *world
	// granted: attempts (scope, token) that the store durably made the
	// owner of an in_progress record.
	granted map[attemptID]bool
	firstCh []*charge    // by scope: the first real charge
	seen    []seenAnswer // by scope: the first outcome a client saw
}

// seenAnswer is the first outcome a client saw for a scope; its slices are
// shared with the answer and never modified.
type seenAnswer struct {
	response core.Response
	ok       bool
}

func (c *checker) init(w *world) {
	c.w = w
	c.granted = make(map[attemptID]bool, w.cfg.Requests)
	c.firstCh = make([]*charge, w.cfg.Requests)
	c.seen = make([]seenAnswer, w.cfg.Requests)
}

// fail records a violation and stops the run.
func (c *checker) fail(inv int, scope int32, format string, args ...any) {
	w := c.w
	v := Violation{Invariant: inv, Name: invariantNames[inv], At: w.now, Detail: fmt.Sprintf(format, args...)}
	if scope >= 0 {
		v.Scope = w.scopes[scope].String()
		for i := range w.events {
			if e := &w.events[i]; e.Scope == scope {
				v.Events = append(v.Events, e.Describe())
			}
		}
	}
	w.report.Violations = append(w.report.Violations, v)
	w.report.violatingScope = scope
	w.stopped = true
}

// write hears a write the store applied (invariant 4 and the grants of 7).
func (c *checker) write(m opMeta, rec *core.Record, kind core.WriteKind, expectToken core.Token) {
	if m.scope < 0 {
		return
	}
	if rec.Status == core.StatusInProgress && kind != core.WriteDelete {
		c.granted[attemptID{m.scope, rec.Token}] = true
	}
	switch m.event {
	case core.EventComplete, core.EventFail, core.EventMarkUnknown, core.EventHeartbeat:
		// An owner's write must find its own attempt's token on the record.
		if m.actor == ActorServer && kind != core.WriteInsert && expectToken != m.attempt {
			c.fail(4, m.scope, "%v of attempt %d wrote over the record of attempt %d", m.event, m.attempt, expectToken)
		}
	}
}

// gatewayCall hears an attempt start its side effect (invariant 7).
func (c *checker) gatewayCall(scope int32, token core.Token) {
	c.w.report.Executions++
	if !c.granted[attemptID{scope, token}] {
		c.fail(7, scope, "attempt %d called the gateway without a reservation the store acknowledged", token)
	}
}

// charge hears the gateway charge (invariants 1 and 3).
func (c *checker) charge(req *request, ch *charge) {
	if ch.declined {
		c.w.report.Declines++
		return
	}
	c.w.report.Charges++
	if first := c.firstCh[req.scope]; first != nil {
		c.fail(1, req.scope, "charge %d (payload %d) is a second real charge for this scope, after charge %d (payload %d)", ch.id, ch.payload, first.id, first.payload)
		return
	}
	c.firstCh[req.scope] = ch
	if rec := &c.w.shadow[req.scope]; rec.Exists() && rec.Fingerprint != req.fp && c.w.cfg.Baseline.comparesFingerprints() {
		c.fail(3, req.scope, "payload %d executed under a record of another fingerprint", req.payload)
	}
}

// answer hears a client receive an answer (invariants 2 and 3).
func (c *checker) answer(req *request, a *answer) {
	if !a.definitive || a.status == 422 {
		return
	}
	if p := payloadOf(&a.response); p != req.payload {
		c.fail(3, req.scope, "the client of payload %d received the outcome of payload %d", req.payload, p)
		return
	}
	if first := &c.seen[req.scope]; !first.ok {
		*first = seenAnswer{a.response, true}
	} else if !first.response.Equal(a.response) {
		c.fail(2, req.scope, "outcomes differ: %s, then %s", first.response.Describe(), a.response.Describe())
	}
}

// final checks the end state: invariants 2, 5 and 6.
func (c *checker) final() {
	w := c.w
	for i := range w.shadow {
		scope := int32(i)
		rec := &w.shadow[i]
		switch rec.Status {
		case core.StatusInProgress, core.StatusUnknown:
			c.fail(5, scope, "still %v after faults stopped %v ago", rec.Status, fmtTime(w.now-w.healAt))
			return
		case core.StatusCompleted:
			if first := &c.seen[scope]; first.ok && !first.response.Equal(rec.Response) {
				c.fail(2, scope, "clients saw %s, the store holds %s", first.response.Describe(), rec.Response.Describe())
				return
			}
		}
	}
	for _, r := range w.requests {
		if !r.done {
			c.fail(6, r.scope, "payload %d has no answer %v after faults stopped", r.payload, fmtTime(w.now-w.healAt))
			return
		}
	}
	if len(w.requests) < w.cfg.Requests {
		c.fail(6, -1, "only %d of %d requests were sent", len(w.requests), w.cfg.Requests)
	}
}

// linearizable checks the run's store history against the store's model
// (-lincheck), and the Applies of a fast-path seed against the lifecycle
// model. A verdict other than Ok (Illegal, or Unknown when the check's
// budget ran out) is a violation.
func (c *checker) linearizable(h []linearizability.StoreOperation, life []linearizability.LifecycleOperation) {
	opts := linearizability.CheckOptions{Timeout: time.Minute, NoVisualization: true}
	res := linearizability.CheckStoreHistory(h, opts)
	c.w.report.LinChecked = res.Operations
	if res.OK() && len(life) > 0 {
		res = linearizability.CheckLifecycleHistory(life, c.w.policy, opts)
		c.w.report.LinChecked += res.Operations
	}
	if res.OK() {
		return
	}
	scope := int32(-1)
	detail := fmt.Sprintf("the store's history of %d operations is %v", res.Operations, res.Check)
	if res.Err != nil {
		detail += ": " + res.Err.Error()
	}
	if len(res.Offending) > 0 {
		scope = c.w.scopeIdx[res.Offending[0].Scope]
	}
	if res.Explanation != "" {
		detail += "\n" + res.Explanation
	}
	c.fail(0, scope, "%s", detail)
}
