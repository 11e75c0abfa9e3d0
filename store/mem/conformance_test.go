package memstore_test

import (
	"testing"
	"time"

	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
	"github.com/idemkit/idem/store/storetest"
)

// TestMemstoreConformance runs the driver suite on the reference driver, as
// any driver's tests would. IDEM_LIN_HISTORIES=1000 is the long run
// (make lincheck-long).
func TestMemstoreConformance(t *testing.T) {
	storetest.RunStoreSuite(t,
		func(t *testing.T) store.Store { return memstore.New(memstore.Options{}) },
		storetest.WithControlledClock(func(t *testing.T, now func() time.Time) store.Store {
			return memstore.New(memstore.Options{Clock: now})
		}),
	)
}
