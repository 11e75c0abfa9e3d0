package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// heldSpy is a HeldApplier that says what it was handed, and fails on demand.
type heldSpy struct {
	store.Store
	held *core.Record
	err  error
}

func (h *heldSpy) ApplyHeld(ctx context.Context, held *core.Record, ev core.Event, p *core.Policy, out *store.Applied) error {
	h.held = held
	if h.err != nil {
		out.Now = time.Unix(1, 0) // something for ApplyHeld to clear
		return h.err
	}
	return store.Apply(ctx, h.Store, held.Scope, ev, p, out)
}

func TestApplyHeld(t *testing.T) {
	ctx := context.Background()
	p := core.PolicyDefault()
	sc := core.Scope{Principal: "p", UseCase: "u", Key: "0123456789abcdef-held"}
	fp := core.Fingerprint{1}
	mem := memstore.New(memstore.Options{})
	var a store.Applied
	if err := store.Apply(ctx, mem, sc, core.Event{Kind: core.EventReserve, Fingerprint: fp}, &p, &a); err != nil {
		t.Fatal(err)
	}
	held := a.Record
	complete := core.Event{Kind: core.EventComplete, Token: held.Token, Response: core.Response{StatusCode: 201}}

	t.Run("uses-the-fast-path", func(t *testing.T) {
		spy := &heldSpy{Store: store.HideApplier(mem)}
		var out store.Applied
		if err := store.ApplyHeld(ctx, spy, &held, complete, &p, &out); err != nil {
			t.Fatal(err)
		}
		if spy.held != &held || out.Transition.Decision.Kind != core.DecisionCompleted {
			t.Fatalf("held %p (want %p), decision %v", spy.held, &held, out.Transition.Decision.Kind)
		}
	})
	t.Run("store-error-is-an-Error", func(t *testing.T) {
		boom := errors.New("boom")
		spy := &heldSpy{Store: mem, err: boom}
		var out store.Applied
		err := store.ApplyHeld(ctx, spy, &held, complete, &p, &out)
		var se *store.Error
		if !errors.As(err, &se) || se.Method != store.MethodApply || !errors.Is(err, boom) {
			t.Fatalf("err %v, want a *store.Error of apply wrapping boom", err)
		}
		if !out.Now.IsZero() || out.Record.Exists() {
			t.Fatalf("an error left %+v in out", out)
		}
	})
	t.Run("refusal-as-is", func(t *testing.T) {
		spy := &heldSpy{Store: mem, err: core.ErrResponseInvalid}
		var out store.Applied
		if err := store.ApplyHeld(ctx, spy, &held, complete, &p, &out); err != core.ErrResponseInvalid {
			t.Fatalf("err %v, want the core's refusal as is", err)
		}
	})
	t.Run("falls-back-to-Apply", func(t *testing.T) {
		// A wrapped store shows no ApplyHeld: the event goes through Apply.
		w := store.Wrap(store.Layer{Outer: mem, Inner: mem, Apply: store.PassApply})
		if _, ok := w.(store.HeldApplier); ok {
			t.Fatal("a Wrap shows the inner store's ApplyHeld")
		}
		var out store.Applied
		if err := store.ApplyHeld(ctx, w, &held, complete, &p, &out); err != nil {
			t.Fatal(err)
		}
		if k := out.Transition.Decision.Kind; k != core.DecisionAcknowledged {
			t.Fatalf("decision %v, want acknowledged (completed by the first sub-test)", k)
		}
	})
}
