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
	conformance(t, Options{}, historiesForTest())
}

// TestConformanceDueClaim runs the suite again over Stores that claim what
// Due lists (Options.DueClaim), as a service with several instances runs
// them: a Store's own claims never hide a record from it, so the Due
// contract holds as is. Fewer histories: the claim touches only Due.
func TestConformanceDueClaim(t *testing.T) {
	conformance(t, Options{DueClaim: time.Minute}, 1)
}

func conformance(t *testing.T, o Options, histories int) {
	db := newTestDB(t)
	n := 0
	storetest.RunStoreSuite(t,
		func(t *testing.T) store.Store {
			n++
			o := o
			o.Table, o.PollInterval = "records_"+itoa(n), 50*time.Millisecond
			return db.newStore(t, o)
		},
		storetest.WithTimeResolution(time.Microsecond),
		storetest.WithRealLease(300*time.Millisecond),
		storetest.WithHistories(histories),
	)
}
