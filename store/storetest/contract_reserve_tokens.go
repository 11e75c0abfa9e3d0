package storetest

import (
	"context"
	"testing"

	"github.com/idemkit/idem/core"
)

// reserveTokens: every attempt the store's reserve (its Applier, when it
// has one) starts gets a token greater than every token the store handed
// out for the scope before it, a load's fresh token included: on a new key,
// on a retry after a failure (the record's own token is not fresh, nor is
// the next integer after it: a load may have been handed that one), and on
// the key reused after its record was deleted. No two attempts of any
// scopes share a token.
func (c *contract) reserveTokens(t *testing.T) {
	s := c.newStore(t)
	keep, evict := core.PolicyDefault(), core.PolicyDefault()
	keep.Fail, evict.Fail = core.FailKeep, core.FailEvict
	owners := map[core.Token]core.Scope{}
	for i := range 2 {
		sc := c.scope(t, i)
		for _, step := range []struct {
			what string
			fail *core.Policy // how the attempt ends, so that the next is a retry or a new incarnation
		}{{"a new key", &keep}, {"a retry after a failure", &evict}, {"the key reused after a delete", &keep}} {
			handed := load(t, s, sc).FreshToken
			a, err := applyOver(context.Background(), s, step.fail, sc, core.Event{Kind: core.EventReserve, Fingerprint: fpA})
			if err != nil || a.Transition.Decision.Kind != core.DecisionExecute {
				t.Fatalf("scope %d, %s: reserve: %v, %v; want execute", i, step.what, a.Transition.Decision.Kind, err)
			}
			tok := a.Transition.Decision.Token
			if tok <= handed {
				t.Fatalf("scope %d, %s: the attempt's token %d is not above the fresh token %d a load was handed before", i, step.what, tok, handed)
			}
			if other, dup := owners[tok]; dup {
				t.Fatalf("scope %d, %s: token %d was handed to an attempt of %s already", i, step.what, tok, other)
			}
			owners[tok] = sc
			if _, err := applyOver(context.Background(), s, step.fail, sc, core.Event{Kind: core.EventFail, Token: tok}); err != nil {
				t.Fatalf("scope %d, %s: fail: %v", i, step.what, err)
			}
		}
	}
}
