package pgxstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// benchClients is the number of concurrent clients of the Do benchmarks,
// as pgbench's -c: go test -bench Do -cpu 1 runs with GOMAXPROCS... so the
// client count is set with b.SetParallelism over GOMAXPROCS instead.
func benchKeyPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func benchDo(b *testing.B, clients int, replay bool) {
	db := newTestDB(b)
	s := db.newStore(b, Options{})
	ex, err := idem.New(s)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	resp := idem.Response{StatusCode: 201, Body: []byte(`{"paymentId":"p_1","status":"created"}`)}
	action := func(context.Context, idem.Attempt) (idem.Response, error) { return resp, nil }
	prefix := benchKeyPrefix()
	const preloaded = 1000
	if replay {
		for i := range preloaded {
			req := idem.Request{Scope: core.Scope{Principal: "merchant", UseCase: "payments.create", Key: prefix + "-" + itoa(i) + "-replay-key"}, Fingerprint: testFP}
			if _, err := ex.Do(ctx, req, action); err != nil {
				b.Fatal(err)
			}
		}
	}
	var n atomic.Int64
	b.SetParallelism(max(1, clients/gomaxprocs()))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			key := prefix + "-" + itoa(int(i)) + "-new-key-0000"
			if replay {
				key = prefix + "-" + itoa(int(i%preloaded)) + "-replay-key"
			}
			r, err := ex.Do(ctx, idem.Request{Scope: core.Scope{Principal: "merchant", UseCase: "payments.create", Key: key}, Fingerprint: testFP}, action)
			if err != nil || (replay && r.Kind != idem.ResultReplayed) || (!replay && r.Kind != idem.ResultExecuted) {
				b.Errorf("Do: %+v %v", r, err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkDoNewKey is a new key through Executor.Do end to end (two round
// trips), at 1, 4 and 16 clients; compare req/s with pgbench's
// b_lifecycle_autocommit tx/s (make bench-pg runs both).
func BenchmarkDoNewKey(b *testing.B) {
	for _, c := range []int{1, 4, 16} {
		b.Run("clients="+itoa(c), func(b *testing.B) { benchDo(b, c, false) })
	}
}

// BenchmarkDoReplay is a replay of a completed key (one round trip);
// compare with pgbench's d_replay.
func BenchmarkDoReplay(b *testing.B) {
	for _, c := range []int{1, 4, 16} {
		b.Run("clients="+itoa(c), func(b *testing.B) { benchDo(b, c, true) })
	}
}

// BenchmarkWakeLatency measures how long a waiter takes to return after a
// completion of the record it waits on: with LISTEN/NOTIFY, and with the
// poll alone (1 s interval, jittered). p50 and p99 are reported.
func BenchmarkWakeLatency(b *testing.B) {
	for _, c := range []struct {
		name string
		poll time.Duration
	}{{"notify", time.Second}, {"poll-only", -time.Second}} {
		b.Run(c.name, func(b *testing.B) {
			db := newTestDB(b)
			s := db.newStore(b, Options{PollInterval: c.poll})
			ctx := context.Background()
			p := core.DefaultPolicy()
			prefix := benchKeyPrefix()
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				sc := core.Scope{Principal: "p", UseCase: "u", Key: prefix + "-" + itoa(i) + "-wake-key"}
				var a store.Applied
				if err := store.Apply(ctx, s, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP}, &p, &a); err != nil {
					b.Fatal(err)
				}
				woke := make(chan time.Time, 1)
				started := make(chan struct{})
				go func() {
					close(started)
					_ = s.Wait(ctx, sc, a.Record.Version, a.Record.Token)
					woke <- time.Now()
				}()
				<-started
				time.Sleep(2 * time.Millisecond) // let the waiter register and load
				var done store.Applied
				t0 := time.Now()
				if err := store.ApplyHeld(ctx, s, &a.Record, core.Event{Kind: core.EventComplete, Token: a.Record.Token, Response: core.Response{StatusCode: 200}}, &p, &done); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, (<-woke).Sub(t0))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
