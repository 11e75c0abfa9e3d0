package pgxstore

import (
	"testing"
	"time"

	"github.com/idemkit/idem/store"
	"github.com/idemkit/idem/store/storetest"
)

// TestConformance runs the driver suite on the real server. Each sub-test
// gets a table of its own (Due lists every due record), in one schema.
func TestConformance(t *testing.T) {
	db := newTestDB(t)
	n := 0
	storetest.RunStoreSuite(t,
		func(t *testing.T) store.Store {
			n++
			return db.newStore(t, Options{Table: "records_" + itoa(n), PollInterval: 50 * time.Millisecond})
		},
		storetest.WithTimeResolution(time.Microsecond),
		storetest.WithRealLease(300*time.Millisecond),
		storetest.WithHistories(historiesForTest()),
	)
}
