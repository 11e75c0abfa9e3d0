package storetest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// plantedDriver is a driver with one planted bug, and the cases of the
// suite that must catch it. Each case fails its test, so the suite runs
// over the driver in a child process (this test binary, run again), whose
// failure is the expected outcome.
type plantedDriver struct {
	name  string // the bug
	cases string // the sub-tests of RunStoreSuite that must fail, a path: "contract/wait"
	// suite runs RunStoreSuite over the driver, its bug planted or not.
	suite func(t *testing.T, planted bool)
}

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

var plantedDrivers = []plantedDriver{
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
	{"lost-update", "stress/store",
		overToy(func(s *toyStore) { s.casIgnoresVersion = true }, WithHistories(50))},
	{"compare-and-set-accepts-newer-versions", "stress/store",
		overToy(func(s *toyStore) { s.casAcceptsNewer = true }, WithHistories(10))},
	{"fast-path-driver-bugs", "stress/lifecycle",
		overMem(func(s store.Store) store.Store { return driverBugs(s, true) }, false, WithHistories(3))},
}

// Environment of a child run: the driver, and whether its bug is planted;
// and the test that runs the suite in it.
const (
	suiteCatchesTest = "TestSuiteCatchesPlantedDrivers"
	envPlanted       = "IDEM_STORETEST_PLANTED"
	envPlantedOn     = "IDEM_STORETEST_PLANTED_ON"
)

// TestSuiteCatchesPlantedDrivers shows that each case of the suite fires on
// the bug it is there for: over each planted driver the case fails (and
// over the same driver without the bug it passes, so that the failure is
// the bug's). In a child process it is the suite over one driver.
func TestSuiteCatchesPlantedDrivers(t *testing.T) {
	if name := os.Getenv(envPlanted); name != "" {
		for _, d := range plantedDrivers {
			if d.name == name {
				d.suite(t, os.Getenv(envPlantedOn) == "1")
				return
			}
		}
		t.Fatalf("%s=%q: no such planted driver", envPlanted, name)
	}
	for _, d := range plantedDrivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			if out, err := runSuiteChild(t, d, false); err != nil {
				t.Fatalf("the suite's %s fails over the driver without its bug: %v\n%s", d.cases, err, out)
			}
			out, err := runSuiteChild(t, d, true)
			if err == nil {
				t.Fatalf("the suite's %s passes over a driver with the bug %q", d.cases, d.name)
			}
			if want := "--- FAIL: " + suiteCatchesTest + "/" + d.cases + " "; !strings.Contains(out, want) {
				t.Fatalf("over the driver with the bug %q the suite failed, but not in %s:\n%s", d.name, d.cases, out)
			}
		})
	}
}

// runSuiteChild runs d's cases of the suite in a child process and returns
// its output, and an error when it failed.
func runSuiteChild(t *testing.T, d plantedDriver, planted bool) (string, error) {
	pattern := "^" + suiteCatchesTest + "$"
	for _, c := range strings.Split(d.cases, "/") {
		pattern += "/^" + c + "$"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+pattern, "-test.count=1", "-test.timeout=2m")
	on := "0"
	if planted {
		on = "1"
	}
	// The driver's histories are its own: IDEM_LIN_HISTORIES (the long
	// run's) would leave a race too few histories to show, or take long.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, EnvHistories+"=") })
	cmd.Env = append(env, envPlanted+"="+d.name, envPlantedOn+"="+on)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running the child: %v", err)
	}
	return string(out), err
}
