package scenario

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/idemkit/idem/core"
)

// T0 is the origin of every at= offset.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Scope is the scope of a scenario's record; key= names another key of the
// same tenant, principal and use case.
var Scope = core.Scope{Tenant: "acme", Principal: "user-1", UseCase: "payments.create", Key: "550e8400-e29b-41d4-a716-446655440000"}

// eventCommands names the event of each event command.
var eventCommands = map[string]core.EventKind{
	"reserve":      core.EventReserve,
	"complete":     core.EventComplete,
	"fail":         core.EventFail,
	"mark_unknown": core.EventMarkUnknown,
	"heartbeat":    core.EventHeartbeat,
	"resolve":      core.EventResolve,
	"sweep":        core.EventSweep,
}

// eventArgs are the arguments an event command may take.
var eventArgs = []string{"at", "fp", "token", "status", "body", "code", "verdict", "key"}

// event reads an event command: its kind is the command's name.
func event(a args, kind core.EventKind) core.Event {
	a.t.Helper()
	ev := core.Event{Kind: kind, Token: core.Token(a.uint("token")), ErrorCode: core.ErrorCode(a.text("code"))}
	if a.has("at") {
		ev.Now = T0.Add(a.duration("at"))
	}
	if a.has("fp") {
		ev.Fingerprint = Fingerprint(a.text("fp"))
	}
	if a.has("status") {
		ev.Response = core.Response{StatusCode: int(a.uint("status")), Body: []byte(a.text("body")), SchemaVersion: 1}
	}
	if a.has("verdict") {
		ev.Verdict = core.Verdict(a.choice("verdict", 0, "", "executed", "not_executed", "still_unknown"))
	}
	return ev
}

// Fingerprint is a named fingerprint: fp=A is SHA-256("A").
func Fingerprint(name string) core.Fingerprint { return sha256.Sum256([]byte(name)) }

// scopeOf is the scope an event command names: Scope, or Scope with the
// key of key=.
func scopeOf(a args) core.Scope {
	s := Scope
	if a.has("key") {
		s.Key = a.text("key")
	}
	return s
}

// policyArgs are a policy command's arguments: the fields of core.Policy.
var policyArgs = []string{"lease", "ttl", "retention", "expiry", "fail", "backoff_base", "backoff_cap",
	"attempts_max", "in_flight_wait", "in_flight", "retry_after"}

// applyPolicy sets the fields a policy command names.
func applyPolicy(a args, p *core.Policy) {
	a.t.Helper()
	a.only(policyArgs...)
	durations := map[string]*time.Duration{"lease": &p.LeaseDuration, "ttl": &p.TTL, "retention": &p.TombstoneRetention,
		"backoff_base": &p.ReconcileBackoffBase, "backoff_cap": &p.ReconcileBackoffMax,
		"in_flight_wait": &p.InFlightWait, "retry_after": &p.RetryAfter}
	for k, d := range durations {
		if a.has(k) {
			*d = a.duration(k)
		}
	}
	if a.has("attempts_max") {
		p.ReconcileAttemptsMax = uint32(a.uint("attempts_max"))
	}
	p.Expiry = core.ExpiryMode(a.choice("expiry", int(p.Expiry), "soft", "hard"))
	p.Fail = core.FailMode(a.choice("fail", int(p.Fail), "keep", "evict"))
	p.InFlightAnswer = core.InFlightAnswer(a.choice("in_flight", int(p.InFlightAnswer), "conflict", "accepted"))
}

// StepCommand is one command of a Step scenario, read.
type StepCommand struct {
	Cmd    string      // the command: policy, record, or an event's
	Pos    string      // file:line
	Policy core.Policy // the policy in force
	// Event is the event of an event command; nil for policy and record.
	Event *core.Event
	// Other: the event is stepped on Scope (a scope with no record), and
	// the scenario's record stays as it was.
	Other    bool
	Scope    core.Scope
	Expected string
}

// readStep reads one command of a Step scenario, with policy the policy in
// force before it (which a policy command changes).
func readStep(t testing.TB, d *datadriven.TestData, policy *core.Policy) StepCommand {
	t.Helper()
	a := argsOf(t, d)
	c := StepCommand{Cmd: d.Cmd, Pos: d.Pos, Scope: Scope, Expected: d.Expected}
	switch kind, ok := eventCommands[d.Cmd]; {
	case d.Cmd == "policy":
		applyPolicy(a, policy)
	case d.Cmd == "record":
		a.only()
	case ok:
		a.only(eventArgs...)
		ev := event(a, kind)
		c.Event, c.Scope, c.Other = &ev, scopeOf(a), a.has("key")
	default:
		d.Fatalf(t, "unknown command %s", d.Cmd)
	}
	c.Policy = *policy
	return c
}

// Steps runs Step scenarios: a record of Scope, starting absent, that each
// event command steps with a core (core.Step, or another build of it).
type Steps struct {
	step   core.StepFunc
	policy core.Policy
	cur    core.Record
}

// NewSteps is a Step scenario run with step, under the default policy.
func NewSteps(step core.StepFunc) *Steps {
	return &Steps{step: step, policy: core.PolicyDefault(), cur: core.Record{Scope: Scope}}
}

// Run runs one command and says what it did: datadriven.RunTest's function.
func (s *Steps) Run(t *testing.T, d *datadriven.TestData) string {
	c := readStep(t, d, &s.policy)
	if c.Event == nil {
		if d.Cmd == "record" {
			return "record: " + s.cur.Describe()
		}
		return "ok"
	}
	return DescribeStep(&c, &s.cur, s.step)
}

// DescribeStep steps c's event with step over cur (or over a record of
// c.Scope that does not exist, for another key) and says what it did: the
// transition and, for the scenario's own record, the record it left, or the
// error. On an error cur is as it was.
func DescribeStep(c *StepCommand, cur *core.Record, step core.StepFunc) string {
	rec := *cur
	if c.Other {
		rec = core.Record{Scope: c.Scope}
	}
	ev := *c.Event
	tr, err := step(&rec, &ev, &c.Policy)
	switch {
	case err != nil:
		return "error: " + err.Error()
	case c.Other:
		return tr.Describe()
	}
	*cur = rec
	return tr.Describe() + "\nrecord: " + cur.Describe()
}

// ReadSteps reads every command of the Step scenario at path, with the
// policy in force at each, for a host that runs them its own way (the
// Node host's fixture).
func ReadSteps(t *testing.T, path string) []StepCommand {
	policy := core.PolicyDefault()
	var out []StepCommand
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		out = append(out, readStep(t, d, &policy))
		return d.Expected
	})
	return out
}
