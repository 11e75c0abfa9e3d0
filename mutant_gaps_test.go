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

// TestAttemptLockedUntilIsTheRecords: the lease end an action is told is
// the one the store holds for its attempt, no later: downstream calls take
// it as their deadline (mutant exec-attempt-deadline-past-lease).
func TestAttemptLockedUntilIsTheRecords(t *testing.T) {
	f := newFixture(t, nil)
	req := request(key1, payload)
	var told, stored time.Time
	_, err := f.ex.Do(context.Background(), req, func(_ context.Context, at idem.Attempt) (idem.Response, error) {
		told, stored = at.LockedUntil, f.record(t, req).LockedUntil
		return created, nil
	})
	if err != nil || stored.IsZero() || !told.Equal(stored) {
		t.Fatalf("the action was told its lease ends at %v; the store holds %v (%v)", told, stored, err)
	}
}

// TestCheckSeesTheLease: the reconciler hands its Check the record as
// stored, its lease end included, which the Check needs to know when "not
// executed" becomes provable (mutant exec-check-without-lease).
func TestCheckSeesTheLease(t *testing.T) {
	f := newFixture(t, nil)
	req := request(key1, payload)
	f.unknownKey(t, req)
	want := f.record(t, req).LockedUntil
	var seen time.Time
	r := f.reconciler(t, func(_ context.Context, rec idem.Record) (idem.Finding, error) {
		seen = rec.LockedUntil
		return idem.Finding{Verdict: core.VerdictStillUnknown}, nil
	})
	if _, err := r.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want.IsZero() || !seen.Equal(want) {
		t.Fatalf("the Check saw the lease end %v; the record holds %v", seen, want)
	}
}
