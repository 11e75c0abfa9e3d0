package linearizability

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// CheckOptions configure CheckStoreHistory and CheckLifecycleHistory.
type CheckOptions struct {
	ModelOptions
	// Timeout is porcupine's budget for the whole history; zero means none.
	// Past it the check is porcupine.Unknown, which is not a pass.
	Timeout time.Duration
	// VisualizationDir is where the HTML visualization of a history that is
	// not Ok is written; empty means a new directory under os.TempDir().
	VisualizationDir string
	// NoVisualization writes no file.
	NoVisualization bool
	// Name starts the visualization's file name (a test name, a seed).
	Name string
}

// Report is what checking one history found. (Not a verdict: in idem that
// word is the reconciler's finding.)
type Report struct {
	// Check is porcupine.Ok, porcupine.Illegal (not linearizable), or
	// porcupine.Unknown (the budget ran out: not a pass). It is empty when
	// Err reports a malformed history.
	Check porcupine.CheckResult
	// Operations and Scopes are how many operations were checked and in how
	// many partitions. Operations that constrain nothing (failed loads,
	// failed writes) are left out.
	Operations, Scopes int
	// Offending lists scopes whose own history is not Ok, at most
	// offendersMax of them, in the order they first appear.
	Offending []Offense
	// Explanation tells, for the first offending scope, how far porcupine
	// got: the longest linearizable prefix it found, the state it ends in,
	// and the operations none of which could come next.
	Explanation string
	// Visualization is the path of the HTML file written for a history that
	// is not Ok: open it in a browser (see the package documentation).
	Visualization string
	Elapsed       time.Duration
	// Err is a malformed history, or a visualization that could not be written.
	Err error
}

// Offense is one scope whose history is not linearizable, or undecided.
type Offense struct {
	Scope core.Scope
	Check porcupine.CheckResult
}

// OK reports whether the check is porcupine.Ok and nothing went wrong.
func (r Report) OK() bool { return r.Check == porcupine.Ok && r.Err == nil }

func (r Report) String() string {
	var b strings.Builder
	if r.Check == "" {
		b.WriteString("not checked")
	} else {
		b.WriteString(string(r.Check))
	}
	fmt.Fprintf(&b, ": %d operations over %d scopes, checked in %v", r.Operations, r.Scopes, r.Elapsed.Round(time.Microsecond))
	for _, o := range r.Offending {
		fmt.Fprintf(&b, "; %s: %s", o.Check, o.Scope)
	}
	if r.Err != nil {
		b.WriteString("; error: " + r.Err.Error())
	}
	if r.Explanation != "" {
		b.WriteString("\n" + r.Explanation)
	}
	if r.Visualization != "" {
		b.WriteString("\nvisualization: " + r.Visualization)
	}
	return b.String()
}

// offendersMax bounds the scopes isolated and drawn after a failure: one
// illegal scope explains the failure, and a drawing of thousands is unreadable.
const offendersMax = 4

// StoreOperations checks that h is well formed and prepares it for
// StoreModel. Loads and writes that failed are left out: they constrain
// nothing. An ambiguous write gets the return time Pending. The operations
// point into h, which must not change while they are in use.
func StoreOperations(h []StoreOperation, o ModelOptions) ([]porcupine.Operation, error) {
	d := digester{res: o.TimeResolution}
	ops := make([]porcupine.Operation, 0, len(h))
	prepared := make([]storeOp, len(h))
	for i := range h {
		op := &h[i]
		if err := validateCommon(i, op.Client, op.Call, op.Return, op.Ended); err != nil {
			return nil, err
		}
		switch op.Kind {
		case store.MethodLoad:
			if op.Ended == EndedConflict {
				return nil, fmt.Errorf("linearizability: operation %d: a load cannot end in a conflict", i)
			}
			if op.Ended != EndedOK {
				continue
			}
		case store.MethodInsert, store.MethodCompareAndSet:
			if op.Record.Scope != op.Scope {
				return nil, fmt.Errorf("linearizability: operation %d: %v of a record of scope %s under scope %s", i, op.Kind, op.Record.Scope, op.Scope)
			}
		case store.MethodDelete:
		default:
			return nil, fmt.Errorf("linearizability: operation %d: %v", i, op.Kind)
		}
		if op.Ended == EndedFailed {
			continue
		}
		p := &prepared[i]
		p.op = op
		p.digest = d.record(&op.Record, true)
		p.absentOK = op.Kind == store.MethodLoad && !op.Record.Exists() && op.Record.Scope == op.Scope &&
			op.Record.Version == 0 && op.Record.Token == 0
		ret := op.Return
		if op.Ended == EndedIndeterminate {
			ret = Pending
		}
		ops = append(ops, porcupine.Operation{ClientId: op.Client, Input: p, Output: p, Call: op.Call, Return: ret})
	}
	return ops, nil
}

// LifecycleOperations checks that h is well formed and prepares it for
// LifecycleModel. Failed operations are left out; an ambiguous one gets the
// return time Pending. The operations point into h.
func LifecycleOperations(h []LifecycleOperation, o ModelOptions) ([]porcupine.Operation, error) {
	d := digester{res: o.TimeResolution}
	absent := d.record(&core.Record{}, false)
	ops := make([]porcupine.Operation, 0, len(h))
	prepared := make([]lifeOp, len(h))
	for i := range h {
		op := &h[i]
		if err := validateCommon(i, op.Client, op.Call, op.Return, op.Ended); err != nil {
			return nil, err
		}
		if op.Event.Kind == core.EventInvalid || op.Event.Kind > core.EventEvict {
			return nil, fmt.Errorf("linearizability: operation %d: event %v", i, op.Event.Kind)
		}
		switch op.Ended {
		case EndedFailed:
			continue
		case EndedConflict:
			return nil, fmt.Errorf("linearizability: operation %d: a lifecycle operation cannot end in a conflict", i)
		case EndedOK:
			if op.Event.Now.IsZero() {
				return nil, fmt.Errorf("linearizability: operation %d: %v without the store's time (Event.Now)", i, op.Event.Kind)
			}
		}
		p := &prepared[i]
		p.op = op
		p.ev = op.Event
		if p.ev.Kind == core.EventReserve && p.ev.Token == 0 {
			p.ev.Token = reserveTokenUnknown
		}
		p.digest = d.record(&op.Record, false)
		if op.Ended == EndedIndeterminate && op.Transition.Write.Kind == core.WriteDelete {
			p.digest = absent
		}
		p.scopeOK = op.Record.Scope == op.Scope || (!op.Record.Exists() && op.Record.Scope == core.Scope{})
		ret := op.Return
		if op.Ended == EndedIndeterminate {
			ret = Pending
		}
		ops = append(ops, porcupine.Operation{ClientId: op.Client, Input: p, Output: p, Call: op.Call, Return: ret})
	}
	return ops, nil
}

func validateCommon(i, client int, call, ret int64, o Ending) error {
	switch {
	case client < 0:
		return fmt.Errorf("linearizability: operation %d: client %d, want ≥ 0", i, client)
	case o == 0 || o >= endingEnd:
		return fmt.Errorf("linearizability: operation %d: %v", i, o)
	case o != EndedIndeterminate && ret < call:
		return fmt.Errorf("linearizability: operation %d: returned at %d before its call at %d", i, ret, call)
	}
	return nil
}

// CheckStoreHistory checks that a history of store.Store calls is
// linearizable with respect to StoreModel. This is the function for the
// simulator: fill StoreOperation from its own event log (virtual
// nanoseconds are fine), mark writes whose effect the caller could not
// observe EndedIndeterminate, and treat a Report that is not OK as a
// failure (porcupine.Unknown included).
func CheckStoreHistory(h []StoreOperation, o CheckOptions) Report {
	start := time.Now()
	ops, err := StoreOperations(h, o.ModelOptions)
	if err != nil {
		return Report{Err: err, Elapsed: time.Since(start)}
	}
	return check("store", StoreModel(), ops, o, start)
}

// CheckLifecycleHistory checks that a history of events applied under policy
// p is linearizable with respect to LifecycleModel: that some order of them,
// consistent with real time, gives exactly the observed decisions and
// records when replayed through core.Step.
func CheckLifecycleHistory(h []LifecycleOperation, p core.Policy, o CheckOptions) Report {
	start := time.Now()
	if err := p.Validate(); err != nil {
		return Report{Err: err, Elapsed: time.Since(start)}
	}
	ops, err := LifecycleOperations(h, o.ModelOptions)
	if err != nil {
		return Report{Err: err, Elapsed: time.Since(start)}
	}
	return check("lifecycle", LifecycleModel(p, o.ModelOptions), ops, o, start)
}

func check(kind string, model porcupine.Model, ops []porcupine.Operation, o CheckOptions, start time.Time) Report {
	parts := model.Partition(ops)
	r := Report{Operations: len(ops), Scopes: len(parts)}
	whole := model
	whole.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return parts }
	r.Check = porcupine.CheckOperationsTimeout(whole, ops, o.Timeout)
	if r.Check == porcupine.Ok {
		r.Elapsed = time.Since(start)
		return r
	}
	// Find the scopes at fault, each on its own, within about twice the
	// budget, so that the report and the drawing show them alone.
	single := model
	single.Partition = nil
	var bad [][]porcupine.Operation
	var deadline time.Time
	if o.Timeout > 0 {
		deadline = time.Now().Add(2 * o.Timeout)
	}
	for _, part := range parts {
		if v := porcupine.CheckOperationsTimeout(single, part, o.Timeout); v != porcupine.Ok {
			bad = append(bad, part)
			r.Offending = append(r.Offending, Offense{Scope: scopeOf(part[0].Input), Check: v})
		}
		if len(bad) == offendersMax || (!deadline.IsZero() && time.Now().After(deadline)) {
			break
		}
	}
	if len(bad) > 0 {
		var ops []porcupine.Operation
		for _, part := range bad {
			ops = append(ops, part...)
		}
		model.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return bad }
		v, info := porcupine.CheckOperationsVerbose(model, ops, o.Timeout)
		r.Explanation = explain(model, bad[0], info, v)
		annotate(&info, bad)
		if !o.NoVisualization {
			r.Visualization, r.Err = visualize(kind, model, info, o)
		}
	}
	r.Elapsed = time.Since(start)
	return r
}

// annotate names the scope of each partition drawn, on a row of its own.
func annotate(info *porcupine.LinearizationInfo, bad [][]porcupine.Operation) {
	var notes []porcupine.Annotation
	for i, part := range bad {
		first, last := part[0].Call, part[0].Call
		for _, op := range part {
			first = min(first, op.Call)
			if op.Return != Pending {
				last = max(last, op.Return)
			}
		}
		notes = append(notes, porcupine.Annotation{
			Tag:         fmt.Sprintf("scope %d", i+1),
			Start:       first,
			End:         last,
			Description: scopeOf(part[0].Input).String(),
			Details:     "the operations of this scope are checked together; the others are not drawn",
		})
	}
	info.AddAnnotations(notes)
}

// explain describes the longest partial linearization of the first
// partition and what is left after it.
func explain(model porcupine.Model, part []porcupine.Operation, info porcupine.LinearizationInfo, v porcupine.CheckResult) string {
	partials := info.PartialLinearizationsOperations()
	var longest []porcupine.Operation
	if len(partials) > 0 {
		for _, l := range partials[0] {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	state := model.Init()
	placed := map[any]bool{}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d operations linearize", scopeOf(part[0].Input), len(longest), len(part))
	const tail = 4
	for i, op := range longest {
		_, state = model.Step(state, op.Input, op.Output)
		placed[op.Input] = true
		if i >= len(longest)-tail {
			fmt.Fprintf(&b, "\n  %3d. client %d: %s", i+1, op.ClientId, model.DescribeOperation(op.Input, op.Output))
		}
	}
	fmt.Fprintf(&b, "\n  state then: %s", model.DescribeState(state))
	if v == porcupine.Illegal {
		b.WriteString("\n  none of these can come next:")
	} else {
		b.WriteString("\n  the budget ran out before these were placed:")
	}
	rest := make([]porcupine.Operation, 0, len(part))
	for _, op := range part {
		if !placed[op.Input] {
			rest = append(rest, op)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].Call < rest[j].Call })
	for i, op := range rest {
		if i == 6 {
			fmt.Fprintf(&b, "\n    ... and %d more", len(rest)-i)
			break
		}
		ret := strconv.FormatInt(op.Return, 10)
		if op.Return == Pending {
			ret = "pending"
		}
		fmt.Fprintf(&b, "\n    client %d [%d, %s]: %s", op.ClientId, op.Call, ret, model.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}

func scopeOf(input any) core.Scope {
	switch v := input.(type) {
	case *storeOp:
		return v.op.Scope
	case *lifeOp:
		return v.op.Scope
	}
	return core.Scope{}
}

// visualize draws the offending scopes' histories with porcupine's
// partial linearizations into an HTML file.
func visualize(kind string, model porcupine.Model, info porcupine.LinearizationInfo, o CheckOptions) (string, error) {
	dir := o.VisualizationDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "idem-lincheck-"); err != nil {
			return "", fmt.Errorf("linearizability: visualization: %w", err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("linearizability: visualization: %w", err)
	}
	name := kind
	if o.Name != "" {
		name = sanitize(o.Name) + "-" + kind
	}
	f, err := os.CreateTemp(dir, name+"-*.html")
	if err != nil {
		return "", fmt.Errorf("linearizability: visualization: %w", err)
	}
	err = porcupine.Visualize(model, info, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("linearizability: visualization: %w", err)
	}
	path, aerr := filepath.Abs(f.Name())
	if aerr != nil {
		path = f.Name()
	}
	return path, nil
}

// sanitize keeps a name usable as a file name.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}
