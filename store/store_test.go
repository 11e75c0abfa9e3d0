package store_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

var (
	scope = core.Scope{Tenant: "acme", Principal: "user-1", UseCase: "payments.create", Key: "550e8400-e29b-41d4-a716-446655440000"}
	fp    = core.Fingerprint(sha256.Sum256([]byte(`{"amount":100}`)))
	resp  = core.Response{StatusCode: 201, Body: []byte(`{"id":"p1"}`)}
)

// script is a Store whose answers a test sets: the errors of its next
// writes, in order, over a memory store.
type script struct {
	store.Store
	loadErr   error
	writeErrs []error
	calls     []store.Method
}

func (s *script) Load(ctx context.Context, sc core.Scope) (store.Snapshot, error) {
	s.calls = append(s.calls, store.MethodLoad)
	if s.loadErr != nil {
		return store.Snapshot{}, s.loadErr
	}
	return s.Store.Load(ctx, sc)
}

func (s *script) write(m store.Method, apply func() error) error {
	s.calls = append(s.calls, m)
	if len(s.writeErrs) > 0 {
		err := s.writeErrs[0]
		s.writeErrs = s.writeErrs[1:]
		return err
	}
	return apply()
}

func (s *script) Insert(ctx context.Context, r *core.Record) error {
	return s.write(store.MethodInsert, func() error { return s.Store.Insert(ctx, r) })
}

func (s *script) CompareAndSet(ctx context.Context, r *core.Record, v uint64, t core.Token) error {
	return s.write(store.MethodCompareAndSet, func() error { return s.Store.CompareAndSet(ctx, r, v, t) })
}

func (s *script) Delete(ctx context.Context, sc core.Scope, v uint64, t core.Token) error {
	return s.write(store.MethodDelete, func() error { return s.Store.Delete(ctx, sc, v, t) })
}

func newScript() *script {
	return &script{Store: store.HideApplier(memstore.New(memstore.Options{}))}
}

// TestOpProtocol: Next names each store call before Do makes it, Done is
// true exactly when Next is MethodNone, and a lost race loads again.
func TestOpProtocol(t *testing.T) {
	p := core.PolicyDefault()
	s := newScript()
	s.writeErrs = []error{store.ErrConflict} // the first insert loses a race
	op := store.NewOp(scope, core.Event{Kind: core.EventReserve, Fingerprint: fp}, &p)
	var named []store.Method
	for !op.Done() {
		if op.Next() == store.MethodNone {
			t.Fatal("Next is none before Done")
		}
		named = append(named, op.Next())
		op.Do(context.Background(), s)
	}
	if op.Next() != store.MethodNone {
		t.Fatalf("Next after Done: %v", op.Next())
	}
	want := []store.Method{store.MethodLoad, store.MethodInsert, store.MethodLoad, store.MethodInsert}
	if !reflect.DeepEqual(named, want) || !reflect.DeepEqual(s.calls, want) {
		t.Fatalf("named %v, called %v, want %v", named, s.calls, want)
	}
	a, err := op.Applied()
	if err != nil || a.Transition.Decision.Kind != core.DecisionExecute || a.Record.Status != core.StatusInProgress || a.Before != core.StatusAbsent {
		t.Fatalf("%+v %v", a, err)
	}
	op.Do(context.Background(), s) // once Done, Do does nothing
	if len(s.calls) != len(want) {
		t.Fatal("Do called the store after Done")
	}
}

// TestOpGivesUpUnderContention: an Op that loses every race stops with a
// store error instead of spinning for ever.
func TestOpGivesUpUnderContention(t *testing.T) {
	p := core.PolicyDefault()
	s := newScript()
	for range 1000 {
		s.writeErrs = append(s.writeErrs, store.ErrConflict)
	}
	op := store.NewOp(scope, core.Event{Kind: core.EventReserve, Fingerprint: fp}, &p)
	for n := 0; !op.Done(); n++ {
		if n > 1000 {
			t.Fatal("no end under contention")
		}
		op.Do(context.Background(), s)
	}
	_, err := op.Applied()
	var se *store.Error
	if !errors.As(err, &se) || se.Method != store.MethodInsert || !strings.Contains(err.Error(), "concurrent writes") {
		t.Fatalf("%v", err)
	}
}

// TestApplyErrors: a store failure is a *store.Error naming the method, on
// both paths; the core refusing an event is the core's error, unwrapped; a
// store handing the core a record it never made is a store error too.
func TestApplyErrors(t *testing.T) {
	p := core.PolicyDefault()
	down := errors.New("connection refused")
	ctx := context.Background()
	cases := []struct {
		name    string
		store   func() store.Store
		ev      core.Event
		method  store.Method
		refused error
	}{
		{"load fails", func() store.Store { s := newScript(); s.loadErr = down; return s }, core.Event{Kind: core.EventReserve, Fingerprint: fp}, store.MethodLoad, nil},
		{"insert fails", func() store.Store { s := newScript(); s.writeErrs = []error{down}; return s }, core.Event{Kind: core.EventReserve, Fingerprint: fp}, store.MethodInsert, nil},
		{"apply fails", func() store.Store { return failingApplier{down} }, core.Event{Kind: core.EventReserve, Fingerprint: fp}, store.MethodApply, nil},
		{"driver bug", func() store.Store { return corrupt{newScript()} }, core.Event{Kind: core.EventReserve, Fingerprint: fp}, store.MethodLoad, nil},
		{"core refuses, load-step-write", func() store.Store { return newScript() }, core.Event{Kind: core.EventReserve}, 0, core.ErrFingerprintMissing},
		{"core refuses, applier", func() store.Store { return memstore.New(memstore.Options{}) }, core.Event{Kind: core.EventReserve}, 0, core.ErrFingerprintMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out store.Applied
			err := store.Apply(ctx, c.store(), scope, c.ev, &p, &out)
			var se *store.Error
			switch {
			case c.refused != nil:
				if !errors.Is(err, c.refused) || errors.As(err, &se) || !store.BadInput(err) {
					t.Fatalf("%v: want the core's refusal, unwrapped", err)
				}
			case !errors.As(err, &se) || se.Method != c.method || store.BadInput(err):
				t.Fatalf("%v: want a store error of %v", err, c.method)
			}
			if !reflect.ValueOf(out).IsZero() {
				t.Fatal("an error left an outcome behind")
			}
		})
	}
}

type failingApplier struct{ err error }

func (failingApplier) Load(context.Context, core.Scope) (store.Snapshot, error) {
	panic("unreachable")
}
func (failingApplier) Insert(context.Context, *core.Record) error { panic("unreachable") }
func (failingApplier) CompareAndSet(context.Context, *core.Record, uint64, core.Token) error {
	panic("unreachable")
}
func (failingApplier) Delete(context.Context, core.Scope, uint64, core.Token) error {
	panic("unreachable")
}
func (failingApplier) Due(context.Context, store.DueKind, int) ([]core.Record, error) {
	panic("unreachable")
}
func (failingApplier) Wait(context.Context, core.Scope, uint64, core.Token) error {
	panic("unreachable")
}
func (f failingApplier) Apply(context.Context, core.Scope, core.Event, *core.Policy, *store.Applied) error {
	return f.err
}

// corrupt hands the core a record no core ever made: version 0.
type corrupt struct{ store.Store }

func (c corrupt) Load(ctx context.Context, sc core.Scope) (store.Snapshot, error) {
	snap, err := c.Store.Load(ctx, sc)
	snap.Record = core.Record{Scope: sc, Status: core.StatusCompleted, Token: 1, Fingerprint: fp}
	return snap, err
}

// TestWrapDecidesTheFastPath: a wrapper shows the inner store's Apply
// exactly when the inner store has one and the layer asks for it; a layer's
// own Apply sees every fast-path call; nil hides it, so that the outer
// methods see every event.
func TestWrapDecidesTheFastPath(t *testing.T) {
	p := core.PolicyDefault()
	ctx := context.Background()
	mem := memstore.New(memstore.Options{})
	plain := store.HideApplier(mem)
	if _, ok := plain.(store.Applier); ok {
		t.Fatal("HideApplier shows an Apply")
	}
	if store.Unwrap(plain) != mem || store.Unwrap(mem) != nil {
		t.Fatal("Unwrap")
	}
	counted := 0
	count := func(next store.ApplyFunc) store.ApplyFunc {
		return func(ctx context.Context, sc core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
			counted++
			return next(ctx, sc, ev, p, out)
		}
	}
	for _, c := range []struct {
		name  string
		layer store.Layer
		fast  bool
	}{
		{"hidden", store.Layer{Outer: mem, Inner: mem}, false},
		{"passed", store.Layer{Outer: mem, Inner: mem, Apply: store.PassApply}, true},
		{"wrapped", store.Layer{Outer: mem, Inner: mem, Apply: count}, true},
		{"inner has none", store.Layer{Outer: plain, Inner: plain, Apply: count}, false},
	} {
		s := store.Wrap(c.layer)
		if _, ok := s.(store.Applier); ok != c.fast {
			t.Fatalf("%s: Applier %t, want %t", c.name, ok, c.fast)
		}
	}
	// The outer methods of a hidden layer see every call of an event.
	sc := newScript()
	sc.Store = mem
	hidden := store.Wrap(store.Layer{Outer: sc, Inner: mem})
	var out store.Applied
	if err := store.Apply(ctx, hidden, scope, core.Event{Kind: core.EventReserve, Fingerprint: fp}, &p, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sc.calls, []store.Method{store.MethodLoad, store.MethodInsert}) {
		t.Fatalf("outer saw %v", sc.calls)
	}
	wrapped := store.Wrap(store.Layer{Outer: mem, Inner: mem, Apply: count})
	ev := core.Event{Kind: core.EventComplete, Token: out.Transition.Decision.Token, Response: resp}
	if err := store.Apply(ctx, wrapped, scope, ev, &p, &out); err != nil || counted != 1 || out.Transition.Decision.Kind != core.DecisionCompleted {
		t.Fatalf("%v, counted %d", err, counted)
	}
}

func TestMethodNames(t *testing.T) {
	want := "none load insert compare_and_set delete due wait apply"
	var got []string
	for m := store.MethodNone; m <= store.MethodApply; m++ {
		got = append(got, m.String())
	}
	if strings.Join(got, " ") != want || store.Method(99).String() != "method(99)" {
		t.Fatalf("%v", got)
	}
	e := &store.Error{Method: store.MethodCompareAndSet, Err: context.DeadlineExceeded}
	if e.Error() != "idem/store: compare_and_set: context deadline exceeded" || !errors.Is(e, context.DeadlineExceeded) {
		t.Fatal(e)
	}
}

func TestPollWaitSeesAChange(t *testing.T) {
	p := core.PolicyDefault()
	ctx := context.Background()
	mem := memstore.New(memstore.Options{})
	var a store.Applied
	if err := store.Apply(ctx, mem, scope, core.Event{Kind: core.EventReserve, Fingerprint: fp}, &p, &a); err != nil {
		t.Fatal(err)
	}
	changed := make(chan error, 1)
	go func() { changed <- store.PollWait(ctx, mem, scope, a.Record.Version, a.Record.Token, time.Millisecond) }()
	time.Sleep(10 * time.Millisecond)
	select {
	case err := <-changed:
		t.Fatalf("returned before any change: %v", err)
	default:
	}
	var hb store.Applied
	if err := store.Apply(ctx, mem, scope, core.Event{Kind: core.EventHeartbeat, Token: a.Record.Token}, &p, &hb); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-changed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("PollWait missed the change")
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel()
	if err := store.PollWait(short, mem, scope, a.Record.Version+1, a.Record.Token, time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unchanged record: %v", err)
	}
}
