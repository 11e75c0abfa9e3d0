package idem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Gaps the mutant catalogue (mutants/, MUTANTS.md) found: each test here
// fails on the mutant it names.

// TestRecordedFalseWhenCompleteFindsAConflict: the completion was written
// without a store error but the core refused it (the key had been settled
// as not executed meanwhile): Recorded is false (mutant
// exec-recorded-always-true).
func TestRecordedFalseWhenCompleteFindsAConflict(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	req := request(key1, payload)
	r, err := f.ex.Do(ctx, req, func(_ context.Context, at idem.Attempt) (idem.Response, error) {
		pol := f.ex.Policy()
		var a store.Applied
		for _, ev := range []core.Event{
			{Kind: core.EventMarkUnknown, Token: at.Token},
			{Kind: core.EventResolve, Token: at.Token, Verdict: core.VerdictNotExecuted},
		} {
			if err := store.Apply(ctx, f.mem, req.Scope, ev, &pol, &a); err != nil {
				t.Fatalf("%v: %v", ev.Kind, err)
			}
		}
		return created, nil
	})
	if err != nil || r.Kind != idem.ResultExecuted {
		t.Fatalf("%+v %v", r, err)
	}
	if r.Recorded {
		t.Fatalf("Recorded is true, but the key is %v: the completion was not stored", f.status(t, req))
	}
}

// failAfterWait is a store whose loads fail once an in-flight wait ended:
// the reserve after the wait meets a store that went down meanwhile.
type failAfterWait struct{ *flakyStore }

func (s failAfterWait) Wait(ctx context.Context, scope idem.Scope, v uint64, tok core.Token) error {
	err := s.flakyStore.Wait(ctx, scope, v, tok)
	s.fail("load")
	return err
}

// TestStoreDownAfterInFlightWaitIsStoreUnavailable: a request that waited
// for an attempt in flight elsewhere and then cannot reserve again is told
// the store is unavailable, and its action does not run; it is not an empty
// success (mutant exec-do-reserve-error-succeeds).
func TestStoreDownAfterInFlightWaitIsStoreUnavailable(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	req := request(key1, payload)
	pol := f.ex.Policy()
	pol.InFlightWait = 20 * time.Millisecond
	var a store.Applied
	if err := store.Apply(ctx, f.mem, req.Scope, core.Event{Kind: core.EventReserve, Fingerprint: payload}, &pol, &a); err != nil || a.Transition.Decision.Kind != core.DecisionExecute {
		t.Fatalf("the other attempt's reserve: %v %v", a.Transition.Decision.Kind, err)
	}
	ex, err := idem.New(failAfterWait{f.store}, idem.WithPolicy(pol))
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	r, err := ex.Do(ctx, req, func(context.Context, idem.Attempt) (idem.Response, error) { ran = true; return created, nil })
	if !errors.Is(err, idem.ErrStoreUnavailable) || ran {
		t.Fatalf("Do = %+v, %v (action ran: %t), want ErrStoreUnavailable and no run", r, err, ran)
	}
}
