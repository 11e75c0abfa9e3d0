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
	const keys, clients = 10, 8
	for k := range keys {
		count := reservesAtOnce(t, s, testScope("race-"+itoa(k)), clients, true)
		if count[core.DecisionExecute] != 1 || count[core.DecisionInFlight] != clients-1 {
			t.Fatalf("key %d: %v, want 1 execute and %d in flight", k, count, clients-1)
		}
	}
}

// reservesAtOnce sends clients reserves of sc at once and counts their
// decisions; each must succeed when checked.
func reservesAtOnce(t *testing.T, s *Store, sc core.Scope, clients int, checked bool) map[core.DecisionKind]int {
	t.Helper()
	ctx := context.Background()
	p := core.PolicyDefault()
	start := make(chan struct{})
	decisions := make(chan core.DecisionKind, clients)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			<-start
			a, err := applyOver(ctx, s, &p, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
			if err != nil && checked {
				t.Errorf("%s: a concurrent reserve failed: %v", sc, err)
			}
			decisions <- a.Transition.Decision.Kind
		})
	}
	close(start)
	wg.Wait()
	close(decisions)
	count := map[core.DecisionKind]int{}
	for d := range decisions {
		count[d]++
	}
	return count
}
