package linearizability

import (
	"fmt"
	"math"
	"strings"

	"github.com/anishathalye/porcupine"
	"github.com/idemkit/idem/core"
)

// lifeState is the model of one scope's lifecycle: the record core.Step
// left behind, or "unknown" after an ambiguous operation whose write is not
// known. States are immutable: Step copies the record before stepping it.
type lifeState struct {
	rec     core.Record // its Scope is for descriptions only: one partition is one scope
	digest  uint64
	unknown bool
}

var unknownLife = &lifeState{unknown: true}

// lifeOp is a LifecycleOperation prepared for the check.
type lifeOp struct {
	op      *LifecycleOperation
	ev      core.Event // op.Event, with a placeholder token for a Reserve whose token is unknown
	digest  uint64     // of op.Record, scope excluded
	scopeOK bool       // op.Record.Scope is op.Scope (or the record is absent)
}

// LifecycleModel is the sequential specification of the idempotency
// lifecycle of one scope under policy p: the core's own transition function.
// Its Step copies the model's record, applies the operation's event with
// core.Step (Now and the fresh token as the store used them), and accepts the
// operation only if the core gives exactly the observed status before, the
// decision, the write and the record after. There is no second copy of the
// transition table here. Partitioned by scope.
//
// Ambiguity: an operation with EndedIndeterminate and a known write applies that
// write (the record it carried) if its precondition holds where it is
// linearized, else nothing; porcupine may linearize it anywhere after its call
// (its return is Pending), the end included, which stands for "never
// applied". Without a known write the scope becomes unknown, and the next
// operation that observed a record resynchronises the model on it. Failed
// operations change nothing.
//
// Inputs and outputs are prepared by LifecycleOperations
// (CheckLifecycleHistory does it all).
func LifecycleModel(p core.Policy, o ModelOptions) porcupine.Model {
	d := digester{res: o.TimeResolution}
	policy := p
	return porcupine.Model{
		Partition: partitionBy(func(v any) core.Scope { return v.(*lifeOp).op.Scope }),
		Init:      func() any { return &lifeState{digest: d.record(&core.Record{}, false)} },
		Step: func(state, input, _ any) (bool, any) {
			return lifeStep(d, &policy, state.(*lifeState), input.(*lifeOp))
		},
		Equal: func(a, b any) bool {
			x, y := a.(*lifeState), b.(*lifeState)
			if x.unknown || y.unknown {
				return x.unknown == y.unknown
			}
			return x.digest == y.digest && d.equal(&x.rec, &y.rec)
		},
		Hash: func(s any) uint64 {
			x := s.(*lifeState)
			if x.unknown {
				return 1
			}
			return x.digest
		},
		DescribeOperation: func(in, _ any) string { return describeLifeOp(in.(*lifeOp)) },
		DescribeState: func(s any) string {
			x := s.(*lifeState)
			switch {
			case x.unknown:
				return "unknown: an ambiguous operation may have changed the record in a way not recorded"
			case !x.rec.Exists():
				return "absent"
			}
			return strings.Replace(x.rec.Describe(), " scope="+x.rec.Scope.String(), "", 1)
		},
	}
}

func lifeStep(d digester, p *core.Policy, s *lifeState, o *lifeOp) (bool, any) {
	op := o.op
	switch op.Ended {
	case EndedFailed:
		return true, s
	case EndedIndeterminate:
		if !op.WriteKnown {
			return true, unknownLife
		}
		if s.unknown || !holds(&s.rec, op.Transition.Write) {
			return true, s
		}
		return true, after(o)
	}
	// EndedOK
	if !o.scopeOK {
		return false, s
	}
	if s.unknown {
		return true, after(o)
	}
	if s.rec.Status != op.Before {
		return false, s
	}
	rec := s.rec
	rec.Scope = op.Scope
	res, err := core.Step(&rec, &o.ev, p)
	if err != nil || res.Write != op.Transition.Write || res.Decision.Kind != op.Transition.Decision.Kind ||
		res.Decision.Token != op.Transition.Decision.Token || !d.within(res.Decision.RetryAfter, op.Transition.Decision.RetryAfter) {
		return false, s
	}
	dg := d.record(&rec, false)
	if dg != o.digest || !d.equal(&rec, &op.Record) {
		return false, s
	}
	return true, &lifeState{rec: rec, digest: dg}
}

// holds reports whether the precondition of w holds for the record rec.
func holds(rec *core.Record, w core.Write) bool {
	switch w.Kind {
	case core.WriteInsert:
		return !rec.Exists()
	case core.WriteUpdate, core.WriteDelete:
		return rec.Exists() && rec.Version == w.ExpectVersion && rec.Token == w.ExpectToken
	}
	return false
}

// after is the state an operation's recorded Record stands for.
func after(o *lifeOp) *lifeState {
	rec := o.op.Record
	if o.op.Ended == EndedIndeterminate && o.op.Transition.Write.Kind == core.WriteDelete {
		rec = core.Record{} // LifecycleOperations set the digest to the absent record's
	}
	rec.Scope = o.op.Scope
	return &lifeState{rec: rec, digest: o.digest}
}

func describeLifeOp(o *lifeOp) string {
	op := o.op
	var b strings.Builder
	ev := &op.Event
	b.WriteString(ev.Kind.String())
	switch ev.Kind {
	case core.EventReserve:
		b.WriteString(" fp=" + ev.Fingerprint.Short())
		if ev.Token != 0 {
			fmt.Fprintf(&b, " fresh=t%d", ev.Token)
		}
	case core.EventComplete:
		fmt.Fprintf(&b, " t%d resp=%d/%dB", ev.Token, ev.Response.StatusCode, len(ev.Response.Body))
	case core.EventFail, core.EventMarkUnknown:
		fmt.Fprintf(&b, " t%d", ev.Token)
		if ev.ErrorCode != "" {
			b.WriteString(" " + string(ev.ErrorCode))
		}
	case core.EventHeartbeat:
		fmt.Fprintf(&b, " t%d", ev.Token)
	case core.EventResolve:
		fmt.Fprintf(&b, " t%d %v", ev.Token, ev.Verdict)
	}
	if !ev.Now.IsZero() {
		b.WriteString(" @" + clock(ev.Now))
	}
	switch op.Ended {
	case EndedOK:
		fmt.Fprintf(&b, " → %s, %s ⇒ %s", op.Transition.Decision.Describe(), op.Transition.Write.Describe(), short(&op.Record))
	case EndedIndeterminate:
		if op.WriteKnown {
			fmt.Fprintf(&b, " → indeterminate: %s ⇒ %s may apply at any later instant, or never", op.Transition.Write.Describe(), short(&op.Record))
		} else {
			b.WriteString(" → indeterminate: the store failed; what it did is not known")
		}
	default:
		b.WriteString(" → " + op.Ended.String() + " (no effect)")
	}
	return b.String()
}

// reserveTokenUnknown stands for the fresh token of a Reserve that did not
// execute: greater than any token, so that the core takes the same branch
// as it would with the real one.
const reserveTokenUnknown = core.Token(math.MaxUint64)
