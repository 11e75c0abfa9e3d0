package redisstore

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/store"
	"github.com/idemkit/idem/store/storetest"
)

// TestConformanceStandalone runs the driver suite on one server. Each
// sub-test gets a store of its own (a key prefix: Due lists every due
// record).
func TestConformanceStandalone(t *testing.T) {
	conformance(t, standaloneClient(t), Options{}, historiesForTest())
}

// TestConformanceCluster runs the suite on three primaries with a replica
// each: the scopes spread over every primary.
func TestConformanceCluster(t *testing.T) {
	conformance(t, clusterClient(t), Options{}, historiesForTest())
}

// TestConformanceClusterOptions runs it again with the options that
// change the scripts' path: every call waits for a replica (ReplicasWait),
// and Due claims what it lists (a Store's own claims never hide a record
// from it, so the Due contract holds as is). Fewer histories.
func TestConformanceClusterOptions(t *testing.T) {
	conformance(t, clusterClient(t), Options{ReplicasWait: 1, DueClaim: time.Minute}, 1)
}

func conformance(t *testing.T, c redis.UniversalClient, o Options, histories int) {
	o.PollInterval = 50 * time.Millisecond
	storetest.RunStoreSuite(t,
		func(t *testing.T) store.Store { return newTestStore(t, c, o) },
		storetest.WithRealLease(300*time.Millisecond),
		storetest.WithHistories(histories),
	)
}

// historiesForTest keeps the package's tests to about two minutes on two
// cores; IDEM_LIN_HISTORIES runs the suite longer.
func historiesForTest() int {
	if testing.Short() {
		return 2
	}
	return 5
}
