package linearizability_test

import (
	"fmt"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	"github.com/idemkit/idem/store"
)

// A simulator's store history, on virtual nanoseconds: two clients race to
// insert the record of one scope; the second write ended indeterminate (an
// ambiguous commit). It is linearizable whether that write applied or not,
// but not if a later load sees a record nobody could have written.
func ExampleCheckStoreHistory() {
	scope := core.Scope{Principal: "user-1", UseCase: "payments.create", Key: "550e8400-e29b-41d4-a716-446655440000"}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := func(token core.Token) core.Record {
		return core.Record{Scope: scope, Status: core.StatusInProgress, Fingerprint: core.Fingerprint{1}, Token: token, Version: 1, CreatedAt: now}
	}
	history := []linearizability.StoreOperation{
		{Client: 0, Call: 0, Return: 10, Kind: store.MethodLoad, Scope: scope, Record: core.Record{Scope: scope}, FreshToken: 1, Ended: linearizability.EndedOK},
		{Client: 1, Call: 5, Return: 15, Kind: store.MethodLoad, Scope: scope, Record: core.Record{Scope: scope}, FreshToken: 2, Ended: linearizability.EndedOK},
		{Client: 0, Call: 20, Return: 30, Kind: store.MethodInsert, Scope: scope, Record: rec(1), Ended: linearizability.EndedOK},
		{Client: 1, Call: 25, Return: 40, Kind: store.MethodInsert, Scope: scope, Record: rec(2), Ended: linearizability.EndedIndeterminate},
		{Client: 0, Call: 50, Return: 60, Kind: store.MethodLoad, Scope: scope, Record: rec(1), FreshToken: 3, Ended: linearizability.EndedOK},
	}
	opts := linearizability.CheckOptions{Timeout: time.Second, NoVisualization: true}
	fmt.Println(linearizability.CheckStoreHistory(history, opts).Check)

	history[4].Record = rec(7) // a record no write carried
	fmt.Println(linearizability.CheckStoreHistory(history, opts).Check)
	// Output:
	// Ok
	// Illegal
}
