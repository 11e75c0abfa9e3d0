package idem_test

import (
	"context"
	"testing"

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
