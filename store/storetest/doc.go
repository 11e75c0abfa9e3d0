// Package storetest is the conformance suite every store.Store driver must
// pass, as testing/fstest is for file systems. A driver's tests call
// RunStoreSuite with a factory of stores:
//
//	func TestConformance(t *testing.T) {
//		storetest.RunStoreSuite(t, func(t *testing.T) store.Store {
//			s := newTestStore(t) // empty, or holding none of the suite's scopes
//			t.Cleanup(func() { s.Close() })
//			return s
//		},
//			storetest.WithTimeResolution(time.Microsecond), // timestamptz
//			storetest.WithOperations(200),                  // a slower store: smaller histories
//			storetest.WithHistories(10),
//		)
//	}
//
// It runs functional contract tests of every Store method, and of the
// optional store.Lister and store.Auditor when the store has them (with
// WithControlledClock, the lease, TTL and Due tests run on a clock the suite
// moves; otherwise on the store's own clock with short leases and real
// sleeps), then stress tests: goroutines on a few scopes through the raw
// Store, through store.Apply, and through idem's Executor.Do beside a
// sweeper and a reconciler, each history recorded with a monotonic clock
// and checked for linearizability (package linearizability) within a time
// budget. An Applier store is stressed both through Apply and through
// load-step-write. A history that is Illegal, or Unknown (the budget ran
// out), fails the test: the log has the seed (IDEM_LIN_SEED=seed repeats
// the random choices), the offending scopes, a text explanation, and the
// path of an HTML visualization. IDEM_LIN_HISTORIES=n runs n histories per
// stress test (the long run).
//
// The suite is shown to catch broken drivers: broken_test.go and
// planted_test.go plant one bug each, and suite_catches_test.go runs the
// cases meant for each bug over its driver and requires them to fail (and
// to pass without the bug): CatchPlanted, which a driver's tests use for
// the bugs they plant in it. The package never imports a driver: store/mem
// runs the suite from its own tests.
package storetest
