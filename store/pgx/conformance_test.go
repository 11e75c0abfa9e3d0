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

// TestConformanceOptions runs the suite again over Stores with the
// options that change statements: Due claims what it lists (DueClaim, as a
// service with several instances runs it: a Store's own claims never hide a
// record from it, so the Due contract holds as is), and a reserve reads
// first (ReadFirst). Fewer histories: they touch only Due and the reserve.
func TestConformanceOptions(t *testing.T) {
	conformance(t, Options{DueClaim: time.Minute, ReadFirst: true}, 1)
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
