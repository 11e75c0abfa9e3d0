package scenario

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Flows runs Flow scenarios: an executor over a memory store whose clock
// the scenario sets, and the requests' Flows hosted by hand, one effect per
// command, as Executor.Do hosts them. Other actors (a sweeper, the
// reconciler, a client of another key) are event commands, applied to the
// store directly.
type Flows struct {
	world
	ex    *idem.Executor
	flows map[string]*hosted
}

// hosted is one request's Flow and what its host keeps beside it, as Do's
// doHost keeps it.
type hosted struct {
	f       *idem.Flow
	scope   core.Scope
	sent    time.Time // when the last apply was sent: a lease it grants starts there
	lease   idem.Lease
	applied store.Applied
}

// NewFlows is a Flow scenario run whose store steps events with step
// (core.Step, or another build of it), under the default policy, with the
// store's clock at T0.
func NewFlows(step core.StepFunc) *Flows {
	s := &Flows{flows: map[string]*hosted{}}
	s.init(step)
	return s
}

// Run runs one command and says what it did: datadriven.RunTest's function.
func (s *Flows) Run(t *testing.T, d *datadriven.TestData) string {
	a := s.at(t, d)
	switch d.Cmd {
	case "policy":
		if s.ex != nil {
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
	if s.ex == nil {
		ex, err := idem.New(s.st, idem.WithPolicy(s.policy))
		if err != nil {
			a.d.Fatalf(a.t, "%v", err)
		}
		s.ex = ex
	}
	name := a.text("flow")
	if _, ok := s.flows[name]; ok || name == "" {
		a.d.Fatalf(a.t, "flow=%q: want a name not used before", name)
	}
	req := idem.Request{Scope: scopeOf(a)}
	if a.has("fp") {
		req.Fingerprint = Fingerprint(a.text("fp"))
	}
	f, err := s.ex.Begin(req)
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
func DescribeEffect(f *idem.Flow) string {
	e := f.Next()
	switch e.Kind {
	case idem.EffectApply:
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
	case idem.EffectRun:
		return fmt.Sprintf("effect: run token=%d locked_until=%s", e.Attempt.Token, stamp(e.Attempt.LockedUntil))
	case idem.EffectWait:
		return fmt.Sprintf("effect: wait version=%d token=%d for=%v", e.Version, e.Token, e.Wait)
	}
	return describeAnswer(f, e)
}

// describeAnswer is a done Flow's answer.
func describeAnswer(f *idem.Flow, e *idem.Effect) string {
	r, err := f.Result()
	var b strings.Builder
	var ie *idem.Error
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

func kindName(k idem.ResultKind) string {
	switch k {
	case idem.ResultExecuted:
		return "executed"
	case idem.ResultReplayed:
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
