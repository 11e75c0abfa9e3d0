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
	// Checks numbered after §6's invariants: the rules they rest on.
	invLifecycle: "lifecycle rules and policy",
	invBadInput:  "bad input refused",
	invTime:      "time boundaries",
	invExecutor:  "executor contract",
	invMetrics:   "metrics",
}

const (
	invLifecycle = 8  // SPEC §5 and the seed's policy, on every write the store applies (check_store.go)
	invBadInput  = 9  // SPEC §3 and the policy's ranges: bad input refused, nothing written (check_input.go)
	invTime      = 10 // every deadline a transition sets or honours, by the checker's own rules (check_table.go)
	invExecutor  = 11 // Do's contract: leases (§5 Heartbeat, lease loss), the detached outcome, the in-flight answer (check_live.go)
	invMetrics   = 12 // SPEC §7 counters (check_metrics.go)
)

// checker holds a run to SPEC §6. It only observes: the store's writes, the
// gateway's ledger, every answer a client saw, and the end state. It injects
// nothing and decides nothing.
//
// A key lives in incarnations: expiry (or a prune, or a hard delete) ends
// one, and the next reserve starts another, with a new CreatedAt. What binds
// is per incarnation: at most one execution with an effect, one outcome
// replayed to every client.
type checker struct {
	w *world
	// books: by scope, its granted attempts and its incarnations
	// (check_book.go): slices a few entries long, searched
	// faster than maps keyed by (scope, token) are hashed.
	books []scopeBook
	// tokens: every attempt token ever granted, and its scope: a token never
	// repeats, for a scope (across deletes and prunes) or across scopes.
	tokens map[core.Token]int32
	// life holds the store's reads and writes to SPEC §5 and the seed's
	// policy (check_store.go).
	life lifeChecker
	// payload: the fingerprint rules (check_payload.go).
	payload payloadChecks
	// leaseLost: attempts a heartbeat told the record is no longer theirs
	// in progress (check_attempt.go).
	leaseLost map[attemptID]core.DecisionKind
}

// seenAnswer is the first outcome a client saw for an incarnation; its
// slices are shared with the answer and never modified.
type seenAnswer struct {
	response core.Response
	ok       bool
}

func (c *checker) init(w *world) {
	c.w = w
	c.books = truncated(c.books, w.cfg.Requests, (*scopeBook).reset)
	c.tokens = cleared(c.tokens, w.cfg.Requests)
	c.life.init(w)
	c.payload.init(w.cfg.Requests)
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

// write hears a write the store applied to scope, whose record was prev
// (invariant 4, the grants of 7, fresh tokens, leases that never shrink).
func (c *checker) write(m opMeta, scope int32, prev, rec *core.Record, kind core.WriteKind, expectToken core.Token) {
	if scope < 0 {
		return
	}
	if kind != core.WriteDelete {
		c.written(scope, rec)
	}
	if kind != core.WriteInsert && prev.Exists() && prev.Token != expectToken {
		// A compare-and-set or delete is on (version, token): one that
		// expected another token must not have applied (a zombie of an
		// earlier incarnation, say).
		c.fail(4, scope, "a %v expecting token %d replaced the record of token %d", kind, expectToken, prev.Token)
		return
	}
	if rec.Status == core.StatusInProgress && kind != core.WriteDelete {
		c.grant(scope, prev, rec)
	}
	switch m.event {
	case core.EventComplete, core.EventFail, core.EventMarkUnknown, core.EventHeartbeat, core.EventEvict:
		// An owner's write must find its own attempt's token on the
		// record, and an operator's evict the token they read.
		if m.ownToken() && kind != core.WriteInsert && expectToken != m.attempt {
			c.fail(4, scope, "%v of attempt %d wrote over the record of attempt %d", m.event, m.attempt, expectToken)
		}
	}
}

// grant hears rec become (or stay) in_progress.
func (c *checker) grant(scope int32, prev, rec *core.Record) {
	b := &c.books[scope]
	if _, ok := b.firstOf(rec.Token); !ok {
		// A new attempt: its token was never granted before, to this scope
		// (deleted and pruned records included) or any other. Tokens grow as
		// the store hands them out, but a grant may come long after its load
		// (a paused server inserting into a key pruned meanwhile), so only
		// uniqueness is required of grants.
		if s, seen := c.tokens[rec.Token]; seen {
			c.fail(4, scope, "token %d granted again (first to scope %d)", rec.Token, s)
			return
		}
		c.tokens[rec.Token] = scope
		// A failed_retryable record executing again is the same life of
		// its key (the core keeps its CreatedAt); anything else is a new one.
		first := rec.Token
		if prev.Status == core.StatusFailedRetryable && rec.CreatedAt.Equal(prev.CreatedAt) {
			if f, ok := b.firstOf(prev.Token); ok {
				first = f
			}
		}
		b.granted = append(b.granted, grantedAttempt{rec.Token, first})
		return
	}
	// The same attempt written again (a heartbeat, a clock that stepped
	// back): its lease never shrinks.
	if prev.Token == rec.Token && prev.Status == core.StatusInProgress && rec.LockedUntil.Before(prev.LockedUntil) {
		c.fail(4, scope, "the lease of attempt %d shrank from %v to %v", rec.Token, prev.LockedUntil, rec.LockedUntil)
	}
}

// gatewayCall hears an attempt start its side effect (invariant 7).
func (c *checker) gatewayCall(scope int32, token core.Token) {
	c.w.report.Executions++
	c.acts(scope, token, "gateway call")
	if _, ok := c.books[scope].firstOf(token); !ok {
		c.fail(7, scope, "attempt %d called the gateway without a reservation the store acknowledged", token)
	}
}

// charge hears the gateway process a request of attempt token: a charge, a
// decline or another business answer (invariants 1 and 3).
func (c *checker) charge(req *request, token core.Token, ch *charge) {
	if ch.kind == chargeMade {
		c.w.report.Charges++
	} else {
		c.w.report.Declines++
	}
	b := &c.books[req.scope]
	inc := b.life(b.incarnationOf(token))
	if b.everEffect && inc.effect == nil {
		c.w.report.Reincarnated++ // a retry after the key's record expired: a new request by design
	}
	b.everEffect = true
	if first := inc.effect; first != nil {
		c.fail(1, req.scope, "request %d (payload %d, %v) is a second execution with an effect in this incarnation of the key, after request %d (payload %d, %v)",
			ch.id, ch.payload, ch.kind, first.id, first.payload, first.kind)
		return
	}
	inc.effect = ch
	if rec := &c.w.shadow[req.scope]; rec.Exists() && rec.Fingerprint != req.fp && c.w.cfg.Baseline.comparesFingerprints() {
		c.fail(3, req.scope, "payload %d executed under a record of another fingerprint", req.payload)
	}
}

// answer hears a client receive an answer (invariants 2 and 3).
func (c *checker) answer(req *request, a *answer) {
	if a.refused {
		return // judged when the server began it (begun)
	}
	if a.definitive && a.status == 422 {
		c.mismatch(req)
	}
	if !a.definitive || a.status == 422 {
		return
	}
	if p := payloadOf(&a.response); p != req.payload {
		c.fail(3, req.scope, "the client of payload %d received the outcome of payload %d", req.payload, p)
		return
	}
	if a.diverged {
		// The action's own answer, which its handler changed after it
		// stored its completion (FaultCompleteInDiffers): the one answer
		// that may differ from the stored outcome, and is told so
		// (Recorded false, held by the lifecycle checker's recorded).
		return
	}
	b := &c.books[req.scope]
	inc := b.life(b.incarnationOf(a.token))
	if first := inc.seen; !first.ok {
		inc.seen = seenAnswer{a.response, true}
	} else if !sameResponse(first.response, a.response) {
		c.fail(2, req.scope, "outcomes differ: %s, then %s", first.response.Describe(), a.response.Describe())
	}
}

// final checks the end state: invariants 2, 5 and 6. A record the
// reconciler gave up on (its attempts ran out) is left to an operator, as
// the policy says: it is counted, and neither it nor its clients break
// invariants 5 and 6.
func (c *checker) final() {
	w := c.w
	abandoned := make([]bool, len(w.shadow))
	for i := range w.shadow {
		scope := int32(i)
		rec := &w.shadow[i]
		switch rec.Status {
		case core.StatusUnknown:
			if c.life.givenUp(scope, rec) {
				abandoned[i] = true
				w.report.Abandoned++
				continue
			}
			c.fail(5, scope, "still %v after faults stopped %v ago", rec.Status, fmtTime(w.now-w.healAt))
			return
		case core.StatusInProgress:
			c.fail(5, scope, "still %v after faults stopped %v ago", rec.Status, fmtTime(w.now-w.healAt))
			return
		case core.StatusCompleted:
			b := &c.books[scope]
			if first := b.seenIn(b.incarnationOf(rec.Token)); first.ok && !sameResponse(first.response, rec.Response) {
				c.fail(2, scope, "clients saw %s, the store holds %s", first.response.Describe(), rec.Response.Describe())
				return
			}
		}
	}
	for _, r := range w.requests {
		if !r.done && !abandoned[r.scope] {
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
		scope = c.w.scopeNumber(res.Offending[0].Scope)
	}
	if res.Explanation != "" {
		detail += "\n" + res.Explanation
	}
	c.fail(0, scope, "%s", detail)
}
