package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// overMem runs the suite over the memory store, or over plant(the memory
// store) when planted; with a controlled clock too when clocked.
func overMem(plant func(store.Store) store.Store, clocked bool, opts ...Option) func(*testing.T, bool) {
	return func(t *testing.T, planted bool) {
		mk := func(s store.Store) store.Store {
			if planted {
				return plant(s)
			}
			return s
		}
		o := slices.Clone(opts)
		if clocked {
			o = append(o, WithControlledClock(func(t *testing.T, now func() time.Time) store.Store {
				return mk(memstore.New(memstore.Options{Clock: now}))
			}))
		}
		RunStoreSuite(t, func(*testing.T) store.Store { return mk(memstore.New(memstore.Options{})) }, o...)
	}
}

// overToy runs the suite over the toy store, with plant applied to it when
// planted.
func overToy(plant func(*toyStore), opts ...Option) func(*testing.T, bool) {
	return func(t *testing.T, planted bool) {
		RunStoreSuite(t, func(*testing.T) store.Store {
			s := newToy()
			if planted {
				plant(s)
			}
			return s
		}, opts...)
	}
}

var plantedDrivers = []PlantedDriver{
	{"error-code-dropped", "contract/insert-load",
		overMem(func(s store.Store) store.Store { return errorCodeDropper{s} }, false)},
	{"fresh-tokens-repeat-until-a-write", "contract/fresh-tokens",
		overMem(func(s store.Store) store.Store { return &writeCountedTokens{Store: s} }, false)},
	{"fresh-tokens-per-scope", "contract/tokens-across-scopes",
		overMem(func(s store.Store) store.Store { return &scopeTokens{Store: s, next: map[core.Scope]core.Token{}} }, false)},
	{"wait-deaf-to-deletes", "contract/wait",
		overMem(func(s store.Store) store.Store { return deafToDeletes{s} }, false)},
	{"reconcile-most-overdue-last", "contract/due",
		overMem(func(s store.Store) store.Store { return reconcileReversed{s} }, true)},
	{"due-limit-zero-is-all", "contract/due",
		overMem(func(s store.Store) store.Store { return limitZeroIsAll{s} }, true)},
	{"apply-before-is-after", "contract/applier",
		overMem(func(s store.Store) store.Store { return beforeIsAfter(s, true) }, true)},
	{"audit-kept-for-a-stale-event", "auditor",
		overMem(func(s store.Store) store.Store { return &auditsEverything{Store: s} }, false)},
	{"lost-update", "stress/store",
		overToy(func(s *toyStore) { s.casIgnoresVersion = true }, WithHistories(50))},
	{"compare-and-set-accepts-newer-versions", "stress/store",
		overToy(func(s *toyStore) { s.casAcceptsNewer = true }, WithHistories(10))},
	{"fast-path-driver-bugs", "stress/lifecycle",
		overMem(func(s store.Store) store.Store { return driverBugs(s, true) }, false, WithHistories(3))},
}

// TestSuiteCatchesPlantedDrivers shows that each case of the suite fires on
// the bug it is there for (CatchPlanted). In a child process it is the
// suite over one driver.
func TestSuiteCatchesPlantedDrivers(t *testing.T) {
	CatchPlanted(t, plantedDrivers)
}
