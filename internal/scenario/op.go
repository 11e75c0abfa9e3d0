package scenario

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Ops runs Op scenarios: one store.Op at a time over a memory store whose
// clock the scenario sets, each of its store calls a command, so that other
// actors' writes (event commands) can land between its load and its write,
// and any call can fail, before or after it reached the store.
type Ops struct {
	world
	op      *store.Op
	faulted faultStore
}

// NewOps is an Op scenario run whose Ops step with step (core.Step, or
// another build of it), under the default policy, with the store's clock
// at T0.
func NewOps(step core.StepFunc) *Ops {
	s := new(Ops)
	s.init(step)
	s.faulted.Store = s.st
	return s
}

// Run runs one command and says what it did: datadriven.RunTest's function.
func (s *Ops) Run(t *testing.T, d *datadriven.TestData) string {
	a := s.at(t, d)
	switch d.Cmd {
	case "policy":
		applyPolicy(a, &s.policy)
		return "ok"
	case "op":
		return s.start(a)
	case "call":
		return s.call(a)
	}
	return s.common(a)
}

// start begins an Op: event= names its event, the other arguments are an
// event command's. The store gives it its time and, for a reserve, its
// token.
func (s *Ops) start(a args) string {
	a.only(append([]string{"event"}, eventArgs...)...)
	if s.op != nil && !s.op.Done() {
		a.d.Fatalf(a.t, "op: the last op is not done (next: %s)", s.op.Next())
	}
	kind, ok := eventCommands[a.text("event")]
	if !ok {
		a.d.Fatalf(a.t, "op: event=%q is not an event", a.text("event"))
	}
	s.op = store.NewOp(scopeOf(a), event(a, kind), &s.policy)
	s.op.UseStep(s.step)
	return "next: " + s.op.Next().String()
}

// call makes the Op's next store call. error= fails it (unavailable,
// rejected, timeout), before it reached the store or, with written, after it
// was made.
func (s *Ops) call(a args) string {
	a.only("at", "error", "written")
	if s.op == nil || s.op.Done() {
		a.d.Fatalf(a.t, "call: no op is waiting for a call")
	}
	method := s.op.Next()
	s.faulted.fail = storeCause(a)
	s.faulted.written, s.faulted.did = a.has("written"), ""
	s.op.Do(context.Background(), &s.faulted)
	lines := []string{s.faulted.did}
	applied, err := s.op.Applied()
	switch {
	case !s.op.Done():
		if method == store.MethodLoad {
			lines = append(lines, applied.Transition.Describe())
		}
		lines = append(lines, "next: "+s.op.Next().String())
	case err != nil:
		lines = append(lines, "done: error: "+err.Error())
	default:
		if method == store.MethodLoad {
			lines = append(lines, applied.Transition.Describe())
		}
		lines = append(lines, "done: before="+applied.Before.String(), "record: "+applied.Record.Describe())
	}
	return strings.Join(lines, "\n")
}

// faultStore is the memory store as an Op's calls reach it: each call says
// what it did (did), and fails with fail when set, after making the call
// when written is set.
type faultStore struct {
	store.Store
	fail    error
	written bool
	did     string
}

func (f *faultStore) answer(method store.Method, err error) error {
	if f.fail != nil {
		if f.written && err == nil {
			f.did = fmt.Sprintf("%s: made, then heard: %v", method, f.fail)
		} else {
			f.did = fmt.Sprintf("%s: heard: %v", method, f.fail)
		}
		return f.fail
	}
	if err != nil {
		f.did = fmt.Sprintf("%s: %v", method, err)
	} else {
		f.did = method.String() + ": ok"
	}
	return err
}

func (f *faultStore) reach() bool { return f.fail == nil || f.written }

func (f *faultStore) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	var snap store.Snapshot
	var err error
	if f.reach() {
		snap, err = f.Store.Load(ctx, scope)
	}
	if err = f.answer(store.MethodLoad, err); err == nil {
		f.did = fmt.Sprintf("load: %s now=%s fresh_token=%d", snap.Record.Status, stamp(snap.Now), snap.FreshToken)
	}
	return snap, err
}

func (f *faultStore) Insert(ctx context.Context, rec *core.Record) error {
	var err error
	if f.reach() {
		err = f.Store.Insert(ctx, rec)
	}
	return f.answer(store.MethodInsert, err)
}

func (f *faultStore) CompareAndSet(ctx context.Context, rec *core.Record, expectVersion uint64, expectToken core.Token) error {
	var err error
	if f.reach() {
		err = f.Store.CompareAndSet(ctx, rec, expectVersion, expectToken)
	}
	return f.answer(store.MethodCompareAndSet, err)
}

func (f *faultStore) Delete(ctx context.Context, scope core.Scope, expectVersion uint64, expectToken core.Token) error {
	var err error
	if f.reach() {
		err = f.Store.Delete(ctx, scope, expectVersion, expectToken)
	}
	return f.answer(store.MethodDelete, err)
}
