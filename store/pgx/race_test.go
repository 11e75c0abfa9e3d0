package pgxstore

import (
	"context"
	"sync"
	"testing"

	"github.com/idemkit/idem/core"
)

// TestConcurrentReservesOfANewKey: reserves of one new key sent at once,
// through the one-statement reserve (insert, or read what is there): one
// executes, and every other one answers in flight, as the load-step-write
// loop would (store.Applier), none with an error. The race is between a
// statement's snapshot and its insert: several see no row, one inserts.
func TestConcurrentReservesOfANewKey(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{PollInterval: -1})
	ctx := context.Background()
	p := core.PolicyDefault()
	const keys, clients = 10, 8
	for k := range keys {
		sc := testScope("race-" + itoa(k))
		start := make(chan struct{})
		decisions := make(chan core.DecisionKind, clients)
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				a, err := applyOver(ctx, s, &p, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
				if err != nil {
					t.Errorf("key %d: a concurrent reserve failed: %v", k, err)
					return
				}
				decisions <- a.Transition.Decision.Kind
			}()
		}
		close(start)
		wg.Wait()
		close(decisions)
		count := map[core.DecisionKind]int{}
		for d := range decisions {
			count[d]++
		}
		if count[core.DecisionExecute] != 1 || count[core.DecisionInFlight] != clients-1 {
			t.Fatalf("key %d: %v, want 1 execute and %d in flight", k, count, clients-1)
		}
	}
}
