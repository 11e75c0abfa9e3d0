package memstore_test

import (
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	memstore "github.com/idemkit/idem/store/mem"
)

// TestIndexAgreesWithAMap drives one shard's index through random inserts
// and deletes, against a map, with either hash. Few shards, many scopes and
// deletes in the middle of probe runs exercise growth, collisions and the
// backward shift that closes a deleted entry's gap; after every step every
// scope is looked up.
func TestIndexAgreesWithAMap(t *testing.T) {
	ctx := context.Background()
	p := idem.PolicyDefault()
	p.Fail = core.FailEvict
	var scopes []idem.Scope
	for k := range 60 {
		for _, principal := range []string{"a", "b", "c"} {
			scopes = append(scopes, idem.Scope{Principal: principal, UseCase: "u", Key: fmt.Sprintf("key-%02d-0123456789abcdef", k)})
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		m := memstore.New(memstore.Options{Shards: rapid.SampledFrom([]int{1, 2}).Draw(t, "shards"), Deterministic: rapid.Bool().Draw(t, "deterministic")})
		held := map[idem.Scope]core.Token{}
		for step := range rapid.IntRange(1, 400).Draw(t, "steps") {
			sc := scopes[rapid.IntRange(0, len(scopes)-1).Draw(t, fmt.Sprint("scope", step))]
			if tok, ok := held[sc]; ok {
				a, err := applyOver(ctx, m, &p, sc, core.Event{Kind: core.EventFail, Token: tok})
				if err != nil || a.Transition.Write.Kind != core.WriteDelete {
					t.Fatalf("delete %v: %v %v", sc, a.Transition.Write.Kind, err)
				}
				delete(held, sc)
			} else {
				a, err := applyOver(ctx, m, &p, sc, core.Event{Kind: core.EventReserve, Fingerprint: fp})
				if err != nil || a.Transition.Decision.Kind != core.DecisionExecute {
					t.Fatalf("insert %v: %v %v", sc, a.Transition.Decision.Kind, err)
				}
				held[sc] = a.Transition.Decision.Token
			}
			for _, s := range scopes {
				snap, err := m.Load(ctx, s)
				if err != nil {
					t.Fatal(err)
				}
				if tok, ok := held[s]; ok != (snap.Record.Status != core.StatusAbsent) || snap.Record.Token != tok {
					t.Fatalf("step %d: %v holds %s, want token %d (held: %v)", step, s, snap.Record.Describe(), tok, ok)
				}
			}
			if m.Len() != len(held) {
				t.Fatalf("step %d: Len %d, want %d", step, m.Len(), len(held))
			}
		}
	})
}
