package storetest

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/idemkit/idem/linearizability"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Environment variables read by RunStoreSuite. They win over the options, so
// that a Makefile target can run any driver's suite longer, or repeat a seed.
const (
	// EnvHistories sets the number of histories of every stress test.
	EnvHistories = "IDEM_LIN_HISTORIES"
	// EnvSeed sets the seed of the random choices (printed by every run).
	EnvSeed = "IDEM_LIN_SEED"
)

// Option tunes RunStoreSuite.
type Option func(*config)

type config struct {
	scopes       int
	goroutines   int
	operations   int
	histories    int
	checkTimeout time.Duration
	seed         uint64
	seedSet      bool
	resolution   time.Duration
	clockStore   func(t *testing.T, now func() time.Time) store.Store
	visualDir    string
	realLease    time.Duration
}

func defaults() config {
	return config{
		scopes:       4,
		goroutines:   8,
		operations:   300,
		histories:    50,
		checkTimeout: 20 * time.Second,
		realLease:    200 * time.Millisecond,
	}
}

// WithScopes sets how many scopes each history works on (4 by default): few
// scopes, many goroutines, high contention. Half of them share an
// idempotency key with another scope.
func WithScopes(n int) Option { return func(c *config) { c.scopes = max(n, 1) } }

// WithGoroutines sets how many goroutines act at once (8 by default).
func WithGoroutines(n int) Option { return func(c *config) { c.goroutines = max(n, 1) } }

// WithOperations sets the operations per history (300 by default; the
// executor stress sends half as many requests).
func WithOperations(n int) Option { return func(c *config) { c.operations = max(n, 1) } }

// WithHistories sets how many histories each stress test records and checks
// (50 by default; IDEM_LIN_HISTORIES overrides it).
func WithHistories(n int) Option { return func(c *config) { c.histories = max(n, 1) } }

// WithCheckTimeout sets porcupine's budget per history (20 s by default).
// A history not decided within it fails the test as Unknown.
func WithCheckTimeout(d time.Duration) Option { return func(c *config) { c.checkTimeout = d } }

// WithSeed fixes the seed of the random choices (IDEM_LIN_SEED overrides
// it). Goroutines still interleave as the scheduler decides, so a seed
// repeats the choices, not the history.
func WithSeed(seed uint64) Option { return func(c *config) { c.seed, c.seedSet = seed, true } }

// WithTimeResolution says the store keeps times to d (time.Microsecond for
// PostgreSQL); records are compared at that precision. Exact by default.
func WithTimeResolution(d time.Duration) Option { return func(c *config) { c.resolution = d } }

// WithControlledClock gives the suite a factory of stores whose clock it
// controls, for the contract tests of leases, TTLs and Due. Without it those
// tests run on the store's own clock with short leases and real sleeps
// (WithRealLease). The stress tests never need it.
func WithControlledClock(newStore func(t *testing.T, now func() time.Time) store.Store) Option {
	return func(c *config) { c.clockStore = newStore }
}

// WithRealLease sets the lease the time-dependent contract tests use when
// the clock is not controlled (200 ms by default): long enough for the
// store's round trips, as short as the test time allows.
func WithRealLease(d time.Duration) Option { return func(c *config) { c.realLease = d } }

// WithVisualizationDir sets where the HTML of a failed history goes (a new
// directory under os.TempDir() by default; the path is logged).
func WithVisualizationDir(dir string) Option { return func(c *config) { c.visualDir = dir } }

// RunStoreSuite is the conformance suite of a store.Store driver. newStore
// is called once per sub-test and must return an empty store: the Due tests
// list every due record. (Every history uses fresh random keys and deletes
// the records it made, so the stress tests share one store across their
// histories.) Register any cleanup with t.Cleanup.
//
// It runs:
//
//   - contract: functional tests of every Store method and its edge cases
//     (insert of an existing scope, compare-and-set on a stale version or
//     token, delete of a deleted record, fresh tokens after a delete and
//     across scopes read at once, the
//     reserve's tokens above every one handed out before, Due in order and
//     in batches and across its kinds, Wait, copies of responses, scopes
//     sharing a key,
//     an Applier's agreement with the load-step-write loop, and every byte
//     the core accepts in a header, a body or an error code, written
//     through each write path and loaded back byte for byte);
//   - stress/store: goroutines calling Load, Insert, CompareAndSet and
//     Delete on a few scopes, with some context deadlines, the history
//     checked against linearizability.StoreModel;
//   - stress/lifecycle: goroutines applying random events through
//     store.Apply, checked against linearizability.LifecycleModel (and, when the store
//     goes through load-step-write, its store calls against linearizability.StoreModel);
//   - stress/executor: goroutines calling Executor.Do with actions that
//     succeed, fail, err or outlive their lease, beside a sweeper and a
//     reconciler, checked as above, plus at-most-once and replay fidelity.
//
// When the store is a store.Applier, the lifecycle and executor stresses run
// twice: through Apply, and with Apply hidden (load, step, compare-and-set).
// A history that is not linearizable, or that porcupine cannot decide within
// the budget, fails the test with the seed and the path of an HTML
// visualization.
func RunStoreSuite(t *testing.T, newStore func(t *testing.T) store.Store, opts ...Option) {
	t.Helper()
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	if v := os.Getenv(EnvHistories); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive integer", EnvHistories, v)
		}
		cfg.histories = n
	}
	if v := os.Getenv(EnvSeed); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned integer", EnvSeed, v)
		}
		cfg.seed, cfg.seedSet = seed, true
	}
	if !cfg.seedSet {
		cfg.seed = randomSeed()
	}
	t.Logf("seed %d (%s=%d repeats the random choices); %d histories of %d operations, %d goroutines, %d scopes",
		cfg.seed, EnvSeed, cfg.seed, cfg.histories, cfg.operations, cfg.goroutines, cfg.scopes)
	t.Run("contract", func(t *testing.T) { runContract(t, newStore, &cfg) })
	t.Run("lister", func(t *testing.T) { runLister(t, newStore, &cfg) })
	t.Run("auditor", func(t *testing.T) { runAuditor(t, newStore, &cfg) })
	t.Run("stress", func(t *testing.T) {
		t.Run("store", func(t *testing.T) {
			runHistories(t, &cfg, newStore(t), "store", 2, stressStore)
		})
		for _, variant := range []struct {
			name string
			hide bool
		}{{"", false}, {"-compare-and-set", true}} {
			t.Run("lifecycle"+variant.name, func(t *testing.T) {
				s, ok := variantStore(t, newStore, variant.hide)
				if ok {
					runHistories(t, &cfg, s, "lifecycle"+variant.name, 2, stressLifecycle)
				}
			})
			t.Run("executor"+variant.name, func(t *testing.T) {
				s, ok := variantStore(t, newStore, variant.hide)
				if ok {
					runHistories(t, &cfg, s, "executor"+variant.name, 6, stressExecutor)
				}
			})
		}
	})
}

// variantStore is the store as given, or with its Applier hidden; the
// hidden variant of a store that is not an Applier is the same test, so it
// is not run twice (and says so).
func variantStore(t *testing.T, newStore func(*testing.T) store.Store, hide bool) (store.Store, bool) {
	s := newStore(t)
	if !hide {
		return s, true
	}
	if _, ok := s.(store.Applier); !ok {
		t.Log("the store is not a store.Applier: the variant without Apply is the one above")
		return nil, false
	}
	return store.HideApplier(s), true
}

func randomSeed() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return uint64(time.Now().UnixNano())
	}
	return binary.LittleEndian.Uint64(b[:])
}

// stressFunc runs one history on s and returns what to check.
type stressFunc func(ctx context.Context, s store.Store, h *historySpec) (*historyOut, error)

// historyOut is what one history recorded, with the policy of its events.
type historyOut struct {
	store     []linearizability.StoreOperation
	life      []linearizability.LifecycleOperation
	policy    core.Policy
	problems  []string // invariant violations found beside the histories
	summaries []string // what happened, for the log of the first history
}

func runHistories(t *testing.T, cfg *config, s store.Store, name string, windows int, f stressFunc) {
	t.Helper()
	ctx := context.Background()
	var totals [2]int
	for h := range cfg.histories {
		spec := newHistorySpec(cfg, name, h, windows)
		out, err := f(ctx, s, spec)
		if err != nil {
			t.Fatalf("seed %d history %d: %v", cfg.seed, h, err)
		}
		failed := false
		for _, p := range out.problems {
			t.Errorf("seed %d history %d: %s", cfg.seed, h, p)
			failed = true
		}
		opts := linearizability.CheckOptions{
			ModelOptions:     linearizability.ModelOptions{TimeResolution: cfg.resolution},
			Timeout:          cfg.checkTimeout,
			VisualizationDir: cfg.visualDir,
			Name:             name + "-seed" + strconv.FormatUint(cfg.seed, 10) + "-h" + strconv.Itoa(h),
		}
		if len(out.store) > 0 {
			r := linearizability.CheckStoreHistory(out.store, opts)
			totals[0] += r.Operations
			if !r.OK() {
				t.Errorf("seed %d history %d: store history: %v", cfg.seed, h, r)
				failed = true
			}
		}
		if len(out.life) > 0 {
			r := linearizability.CheckLifecycleHistory(out.life, out.policy, opts)
			totals[1] += r.Operations
			if !r.OK() {
				t.Errorf("seed %d history %d: lifecycle history: %v", cfg.seed, h, r)
				failed = true
			}
		}
		if h == 0 {
			for _, line := range out.summaries {
				if line != "" {
					t.Log(line)
				}
			}
		}
		if failed {
			t.Fatalf("stopped after history %d of %d (seed %d, %s=%d repeats the choices)", h, cfg.histories, cfg.seed, EnvSeed, cfg.seed)
		}
		cleanup(ctx, s, spec.scopes)
	}
	t.Logf("%d histories linearizable: %d store and %d lifecycle operations checked", cfg.histories, totals[0], totals[1])
}

// cleanup deletes the records a history left, so that a store shared by
// histories lists only the current one's in Due.
func cleanup(ctx context.Context, s store.Store, scopes []core.Scope) {
	for _, sc := range scopes {
		for range 10 {
			snap, err := s.Load(ctx, sc)
			if err != nil || !snap.Record.Exists() {
				break
			}
			if s.Delete(ctx, sc, snap.Record.Version, snap.Record.Token) == nil {
				break
			}
		}
	}
}
