package pgxstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// benchGoroutines is how many goroutines RunParallel runs for a client
// count (as pgbench's -c) under b.SetParallelism(max(1, clients/GOMAXPROCS)):
// GOMAXPROCS times that, so 1 client is 2 goroutines on 2 cores, 4 and 16
// are exact. The pool gets one connection per goroutine, as pgbench has one
// per client (pgxpool's default, max(4, NumCPU), would queue 16 clients on
// 4 connections).
func benchGoroutines(clients int) int { return max(1, clients/gomaxprocs()) * gomaxprocs() }

func benchKeyPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// benchClients runs one request per iteration from clients concurrent
// clients (see benchGoroutines), each with a key of its own: a new key, or
// for a replay one of 1000 keys first sent once each. do sends the request;
// an error fails the benchmark.
func benchClients(b *testing.B, clients int, replay bool, do func(key string, replay bool) error) {
	prefix := benchKeyPrefix()
	const preloaded = 1000
	if replay {
		for i := range preloaded {
			if err := do(prefix+"-"+itoa(i)+"-replay-key", false); err != nil {
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
			if err := do(key, replay); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

func benchDo(b *testing.B, clients int, replay bool, o Options) {
	db := newTestDBConns(b, int32(benchGoroutines(clients)))
	benchDoOn(b, db.newStore(b, o), clients, replay)
}

// benchDoOn is benchDo on the Store s.
func benchDoOn(b *testing.B, s *Store, clients int, replay bool) {
	ex, err := idem.New(s)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	resp := idem.Response{StatusCode: 201, Body: []byte(`{"paymentId":"p_1","status":"created"}`)}
	action := func(context.Context, idem.Attempt) (idem.Response, error) { return resp, nil }
	benchClients(b, clients, replay, func(key string, replay bool) error {
		r, err := ex.Do(ctx, idem.Request{Scope: core.Scope{Principal: "merchant", UseCase: "payments.create", Key: key}, Fingerprint: testFP}, action)
		if err != nil || (replay && r.Kind != idem.ResultReplayed) || (!replay && r.Kind != idem.ResultExecuted) {
			return fmt.Errorf("Do: %+v %v", r, err)
		}
		return nil
	})
}

// BenchmarkDoNewKey is a new key through Executor.Do end to end (two round
// trips), at 1, 4 and 16 clients; compare req/s with pgbench's
// b_lifecycle_autocommit tx/s (make bench-pg runs both).
func BenchmarkDoNewKey(b *testing.B) {
	for _, c := range []int{1, 4, 16} {
		b.Run("clients="+itoa(c), func(b *testing.B) { benchDo(b, c, false, Options{}) })
	}
}

// BenchmarkDoReplay is a replay of a completed key (one round trip);
// compare with pgbench's d_replay.
func BenchmarkDoReplay(b *testing.B) {
	for _, c := range []int{1, 4, 16} {
		b.Run("clients="+itoa(c), func(b *testing.B) { benchDo(b, c, true, Options{}) })
	}
}

// BenchmarkDoReadFirst is a new key and a replay through Executor.Do over a
// Store with Options.ReadFirst (a replay is a plain SELECT; a new key one
// more round trip).
func BenchmarkDoReadFirst(b *testing.B) {
	for _, c := range []int{1, 4, 16} {
		b.Run("new/clients="+itoa(c), func(b *testing.B) { benchDo(b, c, false, Options{ReadFirst: true}) })
		b.Run("replay/clients="+itoa(c), func(b *testing.B) { benchDo(b, c, true, Options{ReadFirst: true}) })
	}
}

// BenchmarkDoInsertOrRead is BenchmarkDoReadFirst with every reserve
// sent as the insert-or-read (the default reserve before issue 25): what
// the default's choice (readfirst.go) is measured against.
func BenchmarkDoInsertOrRead(b *testing.B) {
	for _, c := range []int{1, 4, 16} {
		b.Run("new/clients="+itoa(c), func(b *testing.B) { benchDo(b, c, false, Options{readFirst: readFirstNever}) })
		b.Run("replay/clients="+itoa(c), func(b *testing.B) { benchDo(b, c, true, Options{readFirst: readFirstNever}) })
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
			p := core.PolicyDefault()
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

// benchFloor sends the driver's own statements (floorStatements) from
// clients clients: what the driver could reach at best on this machine,
// beside pgbench's raw SQL on its narrower table.
func benchFloor(b *testing.B, clients int, replay, plainSelect bool) {
	db := newTestDBConns(b, int32(benchGoroutines(clients)))
	do := floorStatements(b, db.newStore(b, Options{}), replay, plainSelect)
	benchClients(b, clients, replay, func(key string, _ bool) error { return do(key) })
}

// floorStatements returns a function that sends the driver's own two
// statements of a new key for key (the plain insert, then the fenced
// completion) or, for a replay, the insert-or-read alone, straight through
// pgx: no executor, no core, no checks. plainSelect replays with a plain
// SELECT of the record by its key instead (d_replay's statement on the
// driver's table): the floor of Go and pgx.
func floorStatements(b testing.TB, s *Store, replay, plainSelect bool) func(key string) error {
	selectSQL := bind(`SELECT statement_timestamp(), ` + recordCols + ` FROM ` + s.n.qualified + ` WHERE ` + scopeMatch)
	ctx := context.Background()
	p := core.PolicyDefault()
	// The reserve's template, as the driver computes it once per request
	// (the core checks the scope: the benchmark's, its key replaced below).
	var t template
	absent := core.Record{Scope: benchScope("the-template-key-0000")}
	if ok, err := newTemplate(&t, &absent, core.Event{Kind: core.EventReserve, Fingerprint: testFP}, &p); err != nil || !ok {
		b.Fatal(ok, err)
	}
	return func(key string) error {
		w := t.w
		rec := *w.rec
		rec.Scope = benchScope(key)
		w.rec = &rec
		var (
			ok  bool
			now time.Time
			r   row
		)
		var err error
		var v argv
		switch {
		case replay && plainSelect:
			args := selectSQL.args(v.scope(rec.Scope.Tenant, rec.Scope.Principal, rec.Scope.UseCase, rec.Scope.Key))
			err = s.pool.QueryRow(ctx, selectSQL.sql, args...).Scan(r.dest([]any{&now})...)
		case replay:
			err = s.pool.QueryRow(ctx, s.sql.reserve.sql, s.sql.reserve.args(w.fill(&v, nil))...).Scan(r.dest([]any{&ok, &now})...)
		default:
			err = s.pool.QueryRow(ctx, s.sql.insertNew.sql, s.sql.insertNew.args(w.fill(&v, nil))...).Scan(r.dest([]any{&now})...)
		}
		got := core.Record{Scope: rec.Scope}
		if err == nil {
			err = r.record(&got)
		}
		if err != nil || replay {
			return err
		}
		done := got
		done.Status, done.Version = core.StatusCompleted, got.Version+1
		done.Response = core.Response{StatusCode: 201, Body: []byte(`{"paymentId":"p_1","status":"created"}`)}
		w = literalWrite(&done)
		w.fill(&v, int64(done.Token))
		v[pChannel], v[pPayload], v[pExpectVersion], v[pExpectToken] = s.n.channel, notifyPayload(&done.Scope), int64(got.Version), int64(got.Token)
		if err := s.pool.QueryRow(ctx, s.sql.update.sql, s.sql.update.args(&v)...).Scan(r.dest([]any{&now})...); err != nil {
			return fmt.Errorf("completion: %v", err)
		}
		return nil
	}
}

// BenchmarkFloorNewKey and BenchmarkFloorReplay: the driver's statements
// alone (see benchFloor), at the Do benchmarks' client counts.
func BenchmarkFloorNewKey(b *testing.B) {
	for _, c := range []int{1, 4, 16} {
		b.Run("clients="+itoa(c), func(b *testing.B) { benchFloor(b, c, false, false) })
	}
}

func BenchmarkFloorReplay(b *testing.B) {
	for _, c := range []int{1, 4, 16} {
		b.Run("clients="+itoa(c), func(b *testing.B) { benchFloor(b, c, true, false) })
	}
}

// BenchmarkFloorSelect replays with a plain SELECT by primary key (see
// benchFloor): Go and pgx alone against pgbench's d_replay.
func BenchmarkFloorSelect(b *testing.B) {
	for _, c := range []int{1, 4, 16} {
		b.Run("clients="+itoa(c), func(b *testing.B) { benchFloor(b, c, true, true) })
	}
}
