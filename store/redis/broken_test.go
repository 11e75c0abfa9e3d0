package redisstore

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/store"
	"github.com/idemkit/idem/store/storetest"
)

// TestSuiteCatchesPlantedDrivers shows that the conformance suite catches
// each bug planted in the driver (planted_test.go): over the driver with
// the bug its case fails, over the driver without it the case passes. The
// suite runs in child processes, on this process's servers.
func TestSuiteCatchesPlantedDrivers(t *testing.T) {
	storetest.CatchPlanted(t, []storetest.PlantedDriver{
		{Name: "token-check-skipped", Cases: "contract/compare-and-set", Suite: overDriver(false, tokenCheckSkipped)},
		{Name: "token-check-skipped-in-a-cluster", Cases: "contract/reinsert-after-delete", Suite: overDriver(true, tokenCheckSkipped)},
		// The test cluster's primaries send to their replicas with Nagle's
		// algorithm (repl-disable-tcp-nodelay, as a deployment may): a
		// replica lags by up to 40 ms after a burst of writes, and a load
		// from it returns what the primary has already replaced in several
		// cases of the contract at every run.
		{Name: "replica-reads", Cases: "contract", Suite: overDriver(true, newReplicaReads)},
		{Name: "counter-reset-by-delete", Cases: "contract/fresh-tokens", Suite: overDriver(true, counterResetByDelete)},
		{Name: "audit-lost-on-delete", Cases: "auditor", Suite: overDriver(false, auditLostOnDelete)},
	}, envServers+"="+testServers(t).String())
}

// overDriver runs the suite over the driver on the cluster (or on the
// standalone server), with plant applied to each store when planted.
func overDriver(cluster bool, plant func(*testing.T, *Store) store.Store) func(*testing.T, bool) {
	return func(t *testing.T, planted bool) {
		var c redis.UniversalClient = standaloneClient(t)
		if cluster {
			c = clusterClient(t)
		}
		storetest.RunStoreSuite(t, func(t *testing.T) store.Store {
			s := newTestStore(t, c, Options{PollInterval: 50 * time.Millisecond})
			if planted {
				return plant(t, s)
			}
			return s
		},
			storetest.WithRealLease(300*time.Millisecond),
			// A failing history's visualization goes to t's directory,
			// removed when the child ends.
			storetest.WithVisualizationDir(t.TempDir()))
	}
}
