package mutants

// storetestMutants weaken the conformance suite (store/storetest): each
// lets some broken driver pass. Its own tests run the suite over drivers
// with one planted bug each and require it to fail.
var storetestMutants = []Mutant{
	{
		ID: "suite-same-compares-response", File: "store/storetest/contract.go",
		Old:    "\tif !c.d.SameRecord(&got, &want) {\n\t\tt.Fatalf(\"stored record differs:",
		New:    "\tif !got.Response.Equal(want.Response) {\n\t\tt.Fatalf(\"stored record differs:",
		Desc:   "the contract's read-back check compares only the response: a driver that loses another field (the error code) passes",
		Breaks: "Store contract (a record reads back as written, field by field); SPEC §4 the record",
	},
	{
		ID: "suite-fresh-tokens-may-repeat", File: "store/storetest/contract_tokens.go",
		Old:    "\t\tif snap.FreshToken <= last {\n",
		New:    "\t\tif snap.FreshToken < last {\n",
		Desc:   "fresh-tokens lets two loads hand out the same token",
		Breaks: "store.Snapshot.FreshToken (never handed out before); §6.4 fencing",
	},
	{
		ID: "suite-tokens-unique-per-scope", File: "store/storetest/contract_tokens.go",
		Old:    "\t\t\tif other, dup := seen[snap.FreshToken]; dup {\n",
		New:    "\t\t\tif other, dup := seen[snap.FreshToken]; dup && other == sc {\n",
		Desc:   "the token-uniqueness check looks within a scope only: tokens that repeat across scopes pass",
		Breaks: "store.Snapshot.FreshToken (handed out with no other scope's read); core/doc.go fencing token",
	},
	{
		ID: "suite-bytes-skip-held-path", File: "store/storetest/alphabet.go",
		Old:    "\t\tb.events(fmt.Sprintf(\"apply-held complete %d\", i), true, core.Event{Kind: core.EventComplete, Response: r})\n",
		New:    "",
		Desc:   "the accepted-bytes case leaves out the held path's completion (store.ApplyHeld)",
		Breaks: "SPEC §5 what the core accepts every driver stores byte for byte, through every write path",
	},
	{
		ID: "suite-store-history-logged", File: "store/storetest/suite.go",
		Old:    "\t\t\t\tt.Errorf(\"seed %d history %d: store history: %v\", cfg.seed, h, r)\n\t\t\t\tfailed = true\n",
		New:    "\t\t\t\tt.Logf(\"seed %d history %d: store history: %v\", cfg.seed, h, r)\n",
		Desc:   "a store history that is not linearizable is logged, not failed: the linearizability check's result is ignored",
		Breaks: "RunStoreSuite (a history that is not linearizable fails the test); §6 linearizable store",
	},
	{
		ID: "suite-one-goroutine", File: "store/storetest/suite.go",
		Old:    "\t\tgoroutines:   8,\n",
		New:    "\t\tgoroutines:   1,\n",
		Desc:   "the stress tests run one goroutine: no operations overlap, so no race can show",
		Breaks: "RunStoreSuite stress (goroutines on a few scopes at once)",
	},
	{
		ID: "suite-stress-no-edge-writes", File: "store/storetest/stress_store.go",
		Old:    "\t\t\tif !write {\n\t\t\t\t// An edge case; one that needs a fresh token loads instead.\n\t\t\t\tnext, w, write = edgeWrite(rng, v, &p)\n\t\t\t}\n",
		New:    "",
		Desc:   "the store stress sends only the core's writes, never a write under a wrong precondition",
		Breaks: "stress/store (inserts over a record, compare-and-set and delete under a stale or future precondition)",
	},
	{
		ID: "suite-wait-skips-delete", File: "store/storetest/contract_wait.go",
		Old:    "\twoken(\"a delete\", 2, func() { wantOK(t, \"delete\", s.Delete(ctx, sc, 2, rec.Token)) })\n",
		New:    "",
		Desc:   "the wait case is woken only by a compare-and-set, never by a delete",
		Breaks: "Store.Wait (returns when the record is written or deleted); §5 in-flight wait",
	},
	{
		ID: "suite-due-order-unchecked", File: "store/storetest/contract_due.go",
		Old:    "\tif got := f.due(store.DueReconcile, 10); !slices.Equal(got, []int{3, 0}) {\n",
		New:    "\tif got := f.due(store.DueReconcile, 10); !slices.Equal(slices.Sorted(slices.Values(got)), []int{0, 3}) {\n",
		Desc:   "the due case checks which records Due(reconcile) lists after the backoff, not their order",
		Breaks: "Store.Due (most overdue first)",
	},
	{
		ID: "suite-applier-before-unchecked", File: "store/storetest/contract_applier.go",
		Old:    "\t\tif x.Before != y.Before || x.Transition.Write.Kind != y.Transition.Write.Kind",
		New:    "\t\tif x.Transition.Write.Kind != y.Transition.Write.Kind",
		Desc:   "the applier case does not compare Applied.Before with the load-step-write loop's",
		Breaks: "store.Applier (\"must behave exactly as the package's Apply loop\"); §7 counters that read Before",
	},
	{
		ID: "suite-driver-bugs-counted-as-errors", File: "store/storetest/stress_lifecycle.go",
		Old:    "\t\t\tcase store.DriverBug(err):\n\t\t\t\tproblems.add(\"%v of %s: the store handed the core a bad record or token: %v\", ev.Kind, sc, err)\n",
		New:    "",
		Desc:   "the lifecycle stress counts a driver bug (a bad record or token handed to the core) as an ordinary error",
		Breaks: "store.DriverBug (a bug, never an outage); core/doc.go contract 1 (a fresh token)",
	},
}
