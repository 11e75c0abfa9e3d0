package memstore_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// seedStore is a Go port of the seed document's InMemoryIdempotencyStore:
// one mutex, one map, Reserve and Complete only (no fencing, no leases, no
// TTL, no unknown). It is the baseline the memory store is measured against.
type seedStore struct {
	mu      sync.Mutex
	entries map[string]*seedEntry
}

type seedEntry struct {
	fingerprint string
	completed   bool
	response    *seedResponse
}

type seedResponse struct {
	statusCode int
	body       string
}

type seedDecision int

const (
	seedExecute seedDecision = iota
	seedReplay
	seedInProgress
	seedKeyMisuse
)

func (s *seedStore) Reserve(key, fingerprint string) (seedDecision, *seedResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		s.entries[key] = &seedEntry{fingerprint: fingerprint}
		return seedExecute, nil
	}
	if e.fingerprint != fingerprint {
		return seedKeyMisuse, nil
	}
	if !e.completed {
		return seedInProgress, nil
	}
	return seedReplay, e.response
}

func (s *seedStore) Complete(key string, r *seedResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	e.completed = true
	e.response = r
}

// keys are generated up front so that neither side pays for formatting.
func benchKeys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = "550e8400-e29b-41d4-" + strconv.FormatInt(int64(1<<40+i), 16)
	}
	return ks
}

// benchKeyCount is how many keys a round cycles through: 65,536, or the
// power of two IDEM_BENCH_KEYS_LOG2 sets (20 for a million keys).
var benchKeyCount = func() int {
	if v, err := strconv.Atoi(os.Getenv("IDEM_BENCH_KEYS_LOG2")); err == nil && v > 0 && v < 25 {
		return 1 << v
	}
	return 1 << 16
}()

// rounds runs op for b.N keys taken in turn from keys; each time the keys
// come round, the store starts afresh from fresh, so every key is new to it.
// op may keep what it applies in a, the loop's own Applied.
func rounds[S any](b *testing.B, keys []string, fresh func() S, op func(s S, i int64, key string, a *store.Applied)) {
	s := fresh()
	a := new(store.Applied)
	var i int64
	b.ReportAllocs()
	for b.Loop() {
		k := keys[i&int64(len(keys)-1)]
		if i++; i&int64(len(keys)-1) == 0 {
			s = fresh()
		}
		op(s, i, k, a)
	}
}

// parallelRounds is rounds under RunParallel: the goroutines share one store
// and take keys from a shared counter; whoever takes the first key of a
// round swaps in a fresh store. A goroutine that raced the swap may meet its
// key already taken; op skips it, on every side.
func parallelRounds[S any](b *testing.B, keys []string, fresh func() *S, op func(s *S, i int64, key string, a *store.Applied)) {
	var current atomic.Pointer[S]
	current.Store(fresh())
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		a := new(store.Applied) // each goroutine's own
		for pb.Next() {
			i := next.Add(1)
			if i&int64(len(keys)-1) == 0 {
				current.Store(fresh())
			}
			op(current.Load(), i, keys[i&int64(len(keys)-1)], a)
		}
	})
}

func newSeedStore() *seedStore { return &seedStore{entries: map[string]*seedEntry{}} }

// seedShards are 64 seed stores, one lock each: the floor's store in
// parallel, where the cores never wait for each other.
type seedShards [64]seedStore

func newSeedShards() *seedShards {
	var sh seedShards
	for i := range sh {
		sh[i].entries = map[string]*seedEntry{}
	}
	return &sh
}

// benchCase is what every variant shares: the keys, the payload and the
// responses, and the floor's clock and policy.
type benchCase struct {
	keys     []string
	fpHex    string
	seedResp seedResponse
	resp     idem.Response
	policy   idem.Policy
	clock    func() time.Time
}

func newBenchCase() *benchCase {
	start := time.Now()
	return &benchCase{
		keys:     benchKeys(benchKeyCount),
		fpHex:    fp.String(),
		seedResp: seedResponse{statusCode: 201, body: `{"paymentId":"p-1"}`},
		resp:     response(1),
		policy:   idem.PolicyDefault(),
		// memstore's default clock
		clock: func() time.Time { return start.Add(time.Since(start)) },
	}
}

// fail fails the benchmark: at once in its own goroutine, and from the
// goroutines of RunParallel (parallel), where FailNow may not be called, at
// its end.
func fail(b *testing.B, parallel bool, args ...any) {
	if !parallel {
		b.Fatal(args...)
	}
	b.Error(args...)
}

// notExecuted handles a Reserve that did not say execute. In parallel, with
// no error, it is a key that a goroutine which raced the swap of stores took
// first, and is skipped; anything else fails the benchmark.
func notExecuted(b *testing.B, parallel bool, err error, decision any) {
	if !parallel || err != nil {
		fail(b, parallel, decision, err)
	}
}

// seed is one request on the seed's store: Reserve, and Complete if it
// said execute. Each request builds its own response, which the seed stores
// by reference (the memory store copies the caller's).
func (c *benchCase) seed(b *testing.B, s *seedStore, key string, parallel bool) {
	if d, _ := s.Reserve(key, c.fpHex); d != seedExecute {
		notExecuted(b, parallel, nil, d)
		return
	}
	r := c.seedResp
	s.Complete(key, &r)
}

// floor is seed plus only what the lifecycle cannot do without: per event,
// one read of the store's clock and one core.Step. No store that runs the
// lifecycle through the core can do better; floor / seed bounds the ratio
// the memory store can reach.
func (c *benchCase) floor(b *testing.B, s *seedStore, i int64, key string, parallel bool) {
	rec := core.Record{Scope: idem.Scope{Principal: "p", UseCase: "payments.create", Key: key}}
	ev := core.Event{Kind: core.EventReserve, Now: c.clock(), Token: core.Token(i), Fingerprint: fp}
	if res, err := core.Step(&rec, &ev, &c.policy); err != nil || res.Decision.Kind != core.DecisionExecute {
		fail(b, parallel, res.Decision.Kind, err)
	}
	if d, _ := s.Reserve(key, c.fpHex); d != seedExecute {
		notExecuted(b, parallel, nil, d)
		return
	}
	ev = core.Event{Kind: core.EventComplete, Now: c.clock(), Token: core.Token(i), Response: c.resp}
	if res, err := core.Step(&rec, &ev, &c.policy); err != nil || res.Decision.Kind != core.DecisionCompleted {
		fail(b, parallel, res.Decision.Kind, err)
	}
	r := c.seedResp
	s.Complete(key, &r)
}

// memstore is one request on s: Reserve, then Complete if it said execute.
func (c *benchCase) memstore(b *testing.B, s store.Store, key string, a *store.Applied, parallel bool) {
	lifecycle(b, s, &c.policy, idem.Scope{Principal: "p", UseCase: "payments.create", Key: key}, c.resp, a, parallel)
}

// lifecycle reserves scope over s and completes it with resp, through
// store.Apply into a, which the host keeps from one event to the next (as
// Executor.Do does with the Applied it takes from a pool).
func lifecycle(b *testing.B, s store.Store, p *idem.Policy, scope idem.Scope, resp idem.Response, a *store.Applied, parallel bool) {
	ctx := context.Background()
	err := store.Apply(ctx, s, scope, core.Event{Kind: core.EventReserve, Fingerprint: fp}, p, a)
	if err != nil || a.Transition.Decision.Kind != core.DecisionExecute {
		notExecuted(b, parallel, err, a.Transition.Decision.Kind)
		return
	}
	err = store.Apply(ctx, s, scope, core.Event{Kind: core.EventComplete, Token: a.Transition.Decision.Token, Response: resp}, p, a)
	if err != nil || a.Transition.Decision.Kind != core.DecisionCompleted {
		fail(b, parallel, a.Transition.Decision.Kind, err)
	}
}

// BenchmarkReserveComplete measures one Reserve plus one Complete of a new
// key: the seed's store, the floor, and the memory store doing the whole
// lifecycle (store clock, fresh token, lease, fencing, TTL, versions)
// through the core, by its Applier and by compare-and-set. Keys cycle through
// a fixed set of benchKeyCount; every store starts afresh each time the set
// comes round, so all hold the same number of records.
func BenchmarkReserveComplete(b *testing.B) {
	c := newBenchCase()
	b.Run("seed", func(b *testing.B) {
		rounds(b, c.keys, newSeedStore, func(s *seedStore, _ int64, k string, _ *store.Applied) { c.seed(b, s, k, false) })
	})
	b.Run("floor", func(b *testing.B) {
		rounds(b, c.keys, newSeedStore, func(s *seedStore, i int64, k string, _ *store.Applied) { c.floor(b, s, i, k, false) })
	})
	b.Run("memstore", func(b *testing.B) {
		fresh := func() store.Store { return memstore.New(memstore.Options{}) }
		rounds(b, c.keys, fresh, func(s store.Store, _ int64, k string, a *store.Applied) { c.memstore(b, s, k, a, false) })
	})
	b.Run("memstore-cas", func(b *testing.B) {
		fresh := func() store.Store { return store.HideApplier(memstore.New(memstore.Options{})) }
		rounds(b, c.keys, fresh, func(s store.Store, _ int64, k string, a *store.Applied) { c.memstore(b, s, k, a, false) })
	})
}

// BenchmarkReserveCompleteParallel is the same with RunParallel (see
// parallelRounds); the floor runs over 64 seed stores (seedShards).
func BenchmarkReserveCompleteParallel(b *testing.B) {
	c := newBenchCase()
	b.Run("seed", func(b *testing.B) {
		parallelRounds(b, c.keys, newSeedStore, func(s *seedStore, _ int64, k string, _ *store.Applied) { c.seed(b, s, k, true) })
	})
	b.Run("floor", func(b *testing.B) {
		parallelRounds(b, c.keys, newSeedShards, func(s *seedShards, i int64, k string, _ *store.Applied) { c.floor(b, &s[i&63], i, k, true) })
	})
	b.Run("memstore", func(b *testing.B) {
		fresh := func() *memstore.Store { return memstore.New(memstore.Options{}) }
		parallelRounds(b, c.keys, fresh, func(s *memstore.Store, _ int64, k string, a *store.Applied) { c.memstore(b, s, k, a, true) })
	})
}
