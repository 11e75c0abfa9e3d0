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

// BenchmarkReserveComplete measures one Reserve plus one Complete of a new
// key: the seed's store against the memory store doing the whole lifecycle
// (store clock, fresh token, lease, fencing, TTL, versions) through the core.
// Keys cycle through a fixed set of benchKeyCount; both stores start afresh
// each time the set comes round, so both hold the same number of records.
func BenchmarkReserveComplete(b *testing.B) {
	keys := benchKeys(benchKeyCount)
	fpHex := fp.String()
	seedResp := &seedResponse{statusCode: 201, body: `{"paymentId":"p-1"}`}
	resp := response(1)

	b.Run("seed", func(b *testing.B) {
		s := &seedStore{entries: map[string]*seedEntry{}}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			k := keys[i&(benchKeyCount-1)]
			if i++; i&(benchKeyCount-1) == 0 {
				s = &seedStore{entries: map[string]*seedEntry{}}
			}
			if d, _ := s.Reserve(k, fpHex); d != seedExecute {
				b.Fatal(d)
			}
			// Each request builds its own response, which the seed stores by
			// reference (the memory store copies the caller's).
			r := *seedResp
			s.Complete(k, &r)
		}
	})
	// floor is the seed's store plus only what the lifecycle cannot do
	// without: per event, one read of the store's clock (the memory store's
	// default clock) and one core.Step. No store can do the whole lifecycle
	// faster than this; its ratio to "seed" bounds the one the memory store
	// can reach.
	b.Run("floor", func(b *testing.B) {
		s := &seedStore{entries: map[string]*seedEntry{}}
		start := time.Now()
		clock := func() time.Time { return start.Add(time.Since(start)) }
		p := idem.DefaultPolicy()
		scope := idem.Scope{Principal: "p", UseCase: "payments.create"}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			k := keys[i&(benchKeyCount-1)]
			if i++; i&(benchKeyCount-1) == 0 {
				s = &seedStore{entries: map[string]*seedEntry{}}
			}
			scope.Key = k
			rec := core.Record{Scope: scope}
			ev := core.Event{Kind: core.EventReserve, Now: clock(), Token: core.Token(i), Fingerprint: fp}
			if res, err := core.Step(&rec, &ev, &p); err != nil || res.Decision.Kind != core.DecisionExecute {
				b.Fatal(res.Decision.Kind, err)
			}
			if d, _ := s.Reserve(k, fpHex); d != seedExecute {
				b.Fatal(d)
			}
			ev = core.Event{Kind: core.EventComplete, Now: clock(), Token: core.Token(i), Response: resp}
			if res, err := core.Step(&rec, &ev, &p); err != nil || res.Decision.Kind != core.DecisionCompleted {
				b.Fatal(res.Decision.Kind, err)
			}
			r := *seedResp
			s.Complete(k, &r)
		}
	})
	for _, variant := range []struct {
		name string
		wrap func(*memstore.Store) idem.Store
	}{{"memstore", func(m *memstore.Store) idem.Store { return m }}, {"memstore-cas", func(m *memstore.Store) idem.Store { return casOnly{m} }}} {
		b.Run(variant.name, func(b *testing.B) {
			s := variant.wrap(memstore.New(memstore.Options{}))
			p := idem.DefaultPolicy()
			ctx := context.Background()
			scope := idem.Scope{Principal: "p", UseCase: "payments.create"}
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				scope.Key = keys[i&(benchKeyCount-1)]
				if i++; i&(benchKeyCount-1) == 0 {
					s = variant.wrap(memstore.New(memstore.Options{}))
				}
				lifecycle(b, ctx, s, &p, scope, resp)
			}
		})
	}
}

func lifecycle(b *testing.B, ctx context.Context, s idem.Store, p *idem.Policy, scope idem.Scope, resp idem.Response) {
	a, err := idem.ApplyOver(ctx, s, p, nil, scope, core.Event{Kind: core.EventReserve, Fingerprint: fp})
	if err != nil || a.Result.Decision.Kind != core.DecisionExecute {
		b.Fatal(a.Result.Decision.Kind, err)
	}
	c, err := idem.ApplyOver(ctx, s, p, nil, scope, core.Event{Kind: core.EventComplete, Token: a.Result.Decision.Token, Response: resp})
	if err != nil || c.Result.Decision.Kind != core.DecisionCompleted {
		b.Fatal(c.Result.Decision.Kind, err)
	}
}

// BenchmarkReserveCompleteParallel is the same with RunParallel: the
// goroutines share one store and take keys from a shared counter; whoever
// takes the first key of a round swaps in a fresh store. A goroutine that
// raced the swap may meet its key already taken and skips it, on both sides.
func BenchmarkReserveCompleteParallel(b *testing.B) {
	keys := benchKeys(benchKeyCount)
	fpHex := fp.String()
	seedResp := &seedResponse{statusCode: 201, body: `{"paymentId":"p-1"}`}
	resp := response(1)

	b.Run("seed", func(b *testing.B) {
		var store atomic.Pointer[seedStore]
		store.Store(&seedStore{entries: map[string]*seedEntry{}})
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := next.Add(1)
				if i&int64(benchKeyCount-1) == 0 {
					store.Store(&seedStore{entries: map[string]*seedEntry{}})
				}
				s, k := store.Load(), keys[i&int64(benchKeyCount-1)]
				if d, _ := s.Reserve(k, fpHex); d == seedExecute {
					r := *seedResp
					s.Complete(k, &r)
				}
			}
		})
	})
	// floor: the floor of BenchmarkReserveComplete on 64 seed stores, one
	// per lock, so the cores never wait for each other: the best a store
	// doing the lifecycle could do in parallel.
	b.Run("floor", func(b *testing.B) {
		newShards := func() *[64]seedStore {
			var sh [64]seedStore
			for i := range sh {
				sh[i].entries = map[string]*seedEntry{}
			}
			return &sh
		}
		var store atomic.Pointer[[64]seedStore]
		store.Store(newShards())
		start := time.Now()
		clock := func() time.Time { return start.Add(time.Since(start)) }
		p := idem.DefaultPolicy()
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			scope := idem.Scope{Principal: "p", UseCase: "payments.create"}
			for pb.Next() {
				i := next.Add(1)
				if i&int64(benchKeyCount-1) == 0 {
					store.Store(newShards())
				}
				s, k := &store.Load()[i&63], keys[i&int64(benchKeyCount-1)]
				scope.Key = k
				rec := core.Record{Scope: scope}
				ev := core.Event{Kind: core.EventReserve, Now: clock(), Token: core.Token(i), Fingerprint: fp}
				if _, err := core.Step(&rec, &ev, &p); err != nil {
					b.Error(err)
				}
				if d, _ := s.Reserve(k, fpHex); d == seedExecute {
					ev = core.Event{Kind: core.EventComplete, Now: clock(), Token: core.Token(i), Response: resp}
					if _, err := core.Step(&rec, &ev, &p); err != nil {
						b.Error(err)
					}
					r := *seedResp
					s.Complete(k, &r)
				}
			}
		})
	})
	b.Run("memstore", func(b *testing.B) {
		var store atomic.Pointer[memstore.Store]
		store.Store(memstore.New(memstore.Options{}))
		p := idem.DefaultPolicy()
		ctx := context.Background()
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			scope := idem.Scope{Principal: "p", UseCase: "payments.create"}
			for pb.Next() {
				i := next.Add(1)
				if i&int64(benchKeyCount-1) == 0 {
					store.Store(memstore.New(memstore.Options{}))
				}
				m := store.Load()
				scope.Key = keys[i&int64(benchKeyCount-1)]
				a, err := idem.ApplyOver(ctx, m, &p, nil, scope, core.Event{Kind: core.EventReserve, Fingerprint: fp})
				if err != nil || a.Result.Decision.Kind != core.DecisionExecute {
					continue
				}
				if _, err := idem.ApplyOver(ctx, m, &p, nil, scope, core.Event{Kind: core.EventComplete, Token: a.Result.Decision.Token, Response: resp}); err != nil {
					b.Error(err)
				}
			}
		})
	})
}
