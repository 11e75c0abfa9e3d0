package pgxstore

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// TestHeldRowsAreSkipped: Due with DueClaim and Prune skip rows another
// transaction holds (FOR UPDATE SKIP LOCKED: a client's open transaction, a
// TxStore's completion) instead of queueing behind them: the held records
// are left for a later batch and the others are handled at once.
func TestHeldRowsAreSkipped(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{PollInterval: -1})
	ctx := context.Background()
	leases, tombs := scopes("held-lease", 3), scopes("held-tomb", 3)
	seed(t, s, leases, leaseRanOut(time.Minute))
	seed(t, s, tombs, tombstone(-time.Minute))
	releases := []func(){lockRow(t, db, s, leases[0]), lockRow(t, db, s, tombs[0])}
	worker, pid := db.soloStoreWith(t, "worker", Options{DueClaim: time.Minute, PollInterval: -1})
	// run fails as soon as the worker's backend waits on a lock (once the
	// locks are released and the call is back, so that the worker's pool
	// can close).
	run := func(what string, want int, f func() (int, error)) {
		t.Helper()
		done := make(chan error, 1)
		var n int
		go func() {
			var err error
			n, err = f()
			done <- err
		}()
		for {
			select {
			case err := <-done:
				if err != nil || n != want {
					t.Fatalf("%s: %d, %v; want %d (all but the held rows)", what, n, err, want)
				}
				return
			default:
				if db.waitingOnLock(t, pid) {
					for _, release := range releases {
						release()
					}
					<-done
					t.Fatalf("%s waits for a row another transaction holds", what)
				}
			}
		}
	}
	run("Due(sweep) with DueClaim", 4, func() (int, error) {
		recs, err := worker.Due(ctx, store.DueSweep, 10)
		return len(recs), err
	})
	p := core.PolicyDefault()
	run("Prune", 2, func() (int, error) { return worker.Prune(ctx, &p, 10) })
}
