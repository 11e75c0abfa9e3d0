package scenario

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/flow"
	"github.com/idemkit/idem/store"
)

// Flows runs Flow scenarios: the executor's protocol over a memory store
// whose clock the scenario sets, the requests' Flows hosted by hand, one
// effect per command, as Executor.Do hosts them. Other actors (a sweeper,
// the reconciler, a client of another key) are event commands, applied to
// the store directly.
type Flows struct {
	world
	build FlowBuild
	cfg   *flow.Config // filled at the first begin, under the scenario's policy
	flows map[string]*hosted
}

// Protocol is the Flow a scenario hosts: a *flow.Flow, or another build of
// it (the wasm module's).
type Protocol interface {
	Next() *flow.Effect
	Done() bool
	Result() (flow.Result, error)
	Applied(a *store.Applied, err error)
	Ran(resp core.Response, err error)
	Waited(elapsed time.Duration)
	Gone(err error)
}

// LeaseKeeper is a running attempt's lease as the Protocol keeps it.
type LeaseKeeper interface {
	Event() core.Event
	TellBy() time.Time
	Lost(now time.Time) (cause error, lost bool)
	Beaten(sent, now time.Time, a *store.Applied, err error) (next time.Duration)
}

// FlowBuild is a build of the protocol: how a Flow begins, and how its
// running attempt's lease starts.
type FlowBuild struct {
	Begin func(cfg flow.Config, req flow.Request) (Protocol, error)
	Lease func(p Protocol, sent time.Time) LeaseKeeper
}

// NativeFlows is package flow's own build.
var NativeFlows = FlowBuild{
	Begin: func(cfg flow.Config, req flow.Request) (Protocol, error) { return cfg.Begin(req) },
	Lease: func(p Protocol, sent time.Time) LeaseKeeper {
		l := p.(*flow.Flow).Lease(sent)
		return &l
	},
}

// hosted is one request's Flow and what its host keeps beside it, as Do's
// doHost keeps it.
type hosted struct {
	f       Protocol
	scope   core.Scope
	sent    time.Time // when the last apply was sent: a lease it grants starts there
	lease   LeaseKeeper
	applied store.Applied
}

// NewFlows is a Flow scenario run of package flow's own build, whose store
// steps events with step (core.Step, or another build of it), under the
// default policy, with the store's clock at T0.
func NewFlows(step core.StepFunc) *Flows { return NewFlowsOf(NativeFlows, step) }

// NewFlowsOf is NewFlows for another build of the protocol.
func NewFlowsOf(build FlowBuild, step core.StepFunc) *Flows {
	s := &Flows{build: build, flows: map[string]*hosted{}}
	s.init(step)
	return s
}

// Run runs one command and says what it did: datadriven.RunTest's function.
func (s *Flows) Run(t *testing.T, d *datadriven.TestData) string {
	a := s.at(t, d)
	switch d.Cmd {
	case "policy":
		if s.cfg != nil {
			d.Fatalf(t, "policy after the first begin: the executor has its policy")
		}
		applyPolicy(a, &s.policy)
		return "ok"
	case "begin":
		return s.begin(a)
	case "apply", "run", "waited", "gone", "beat", "lease":
		return s.report(a, s.flow(a))
	}
	return s.common(a)
}

// begin starts a request's Flow: flow= names it, fp= and key= make its
// request.
func (s *Flows) begin(a args) string {
	a.only("flow", "fp", "key", "at")
	if s.cfg == nil {
		s.cfg = &flow.Config{Policy: s.policy} // as idem.New fills it
		if err := s.cfg.Fill(); err != nil {
			a.d.Fatalf(a.t, "%v", err)
		}
	}
	name := a.text("flow")
	if _, ok := s.flows[name]; ok || name == "" {
		a.d.Fatalf(a.t, "flow=%q: want a name not used before", name)
	}
	req := flow.Request{Scope: scopeOf(a)}
	if a.has("fp") {
		req.Fingerprint = Fingerprint(a.text("fp"))
	}
	f, err := s.build.Begin(*s.cfg, req)
	if err != nil {
		return "error: " + err.Error()
	}
	h := &hosted{f: f, scope: req.Scope}
	s.flows[name] = h
	return DescribeEffect(f)
}

// flow is the Flow a report command names.
func (s *Flows) flow(a args) *hosted {
	h, ok := s.flows[a.text("flow")]
	if !ok {
		a.d.Fatalf(a.t, "no flow %q: begin it first", a.text("flow"))
	}
	return h
}

// DescribeEffect says what f asks of its host next, or its answer.
func DescribeEffect(f Protocol) string {
	e := f.Next()
	switch e.Kind {
	case flow.EffectApply:
		w := []string{"effect: apply", e.Event.Kind.String()}
		if e.Event.Token != 0 {
			w = append(w, fmt.Sprintf("token=%d", e.Event.Token))
		}
		if e.Event.ErrorCode != "" {
			w = append(w, "code="+string(e.Event.ErrorCode))
		}
		if e.Event.Kind == core.EventComplete {
			w = append(w, fmt.Sprintf("status=%d", e.Event.Response.StatusCode))
		}
		if e.Held != nil {
			w = append(w, "held")
		}
		if e.Detached {
			w = append(w, "detached", "timeout="+e.Timeout.String())
		}
		return strings.Join(w, " ")
	case flow.EffectRun:
		return fmt.Sprintf("effect: run token=%d locked_until=%s", e.Attempt.Token, stamp(e.Attempt.LockedUntil))
	case flow.EffectWait:
		return fmt.Sprintf("effect: wait version=%d token=%d for=%v", e.Version, e.Token, e.Wait)
	}
	return describeAnswer(f, e)
}

// describeAnswer is a done Flow's answer.
func describeAnswer(f Protocol, e *flow.Effect) string {
	r, err := f.Result()
	var b strings.Builder
	var ie *flow.Error
	switch {
	case err == nil:
		fmt.Fprintf(&b, "answer: %s status=%d token=%d", kindName(r.Kind), r.Response.StatusCode, r.Token)
		if !r.Recorded {
			b.WriteString(" not_recorded")
		}
	case errors.As(err, &ie):
		fmt.Fprintf(&b, "answer: error %s status=%d", ie.Code, ie.Status)
		if ie.RetryAfter > 0 {
			fmt.Fprintf(&b, " retry_after=%v", ie.RetryAfter)
		}
		fmt.Fprintf(&b, " (%v)", err)
	default:
		fmt.Fprintf(&b, "answer: error (%v)", err)
	}
	if e.Panic != nil {
		fmt.Fprintf(&b, " panic=%v", e.Panic)
	}
	return b.String()
}

func kindName(k flow.ResultKind) string {
	switch k {
	case flow.ResultExecuted:
		return "executed"
	case flow.ResultReplayed:
		return "replayed"
	}
	return k.String()
}

// DescribeApplied says what an event did: the transition and the record
// it left.
func DescribeApplied(a *store.Applied) string {
	return a.Transition.Describe() + "\nrecord: " + a.Record.Describe()
}

// stamp is t as records print their times.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
