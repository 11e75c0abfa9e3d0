package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// The benchmarks of issue 24 §4: a new key and a replay through
// Executor.Do, beside the raw baseline, the same write script run straight
// through go-redis (EVALSHA with precomputed arguments): no executor, no
// core, no checks. A new key is the two calls Do makes (the reserve's
// insert, then the completion's update under the version and token the
// insert answered); a replay is the one call Do makes for a completed key
// (the reserve's insert, whose precondition fails and which answers the
// record). Both run on the harness's standalone server and on its
// 3-primary cluster, at 1 and 16 concurrent clients (goroutines sharing one
// client, each with a pooled connection of its own).

// benchPreloaded is how many completed keys a replay cycles through.
const benchPreloaded = 1000

var benchResponse = idem.Response{StatusCode: 201, Body: []byte(`{"paymentId":"p_1","status":"created"}`)}

// The completion's arguments that depend on the attempt (in appendArgs's
// order): its token and its record's creation time.
const (
	completeArgToken   = 2
	completeArgCreated = 7 + fieldCreatedAt - 1
)

// benchRig is a store on one server with what both loops need: the
// executor, the raw loop's precomputed arguments, and the completed keys
// a replay cycles through.
type benchRig struct {
	s      *Store
	ex     *idem.Executor
	prefix string
	// reserve and complete are the reserve's and the completion's
	// encoded arguments, as the driver's templates make them.
	reserve, complete []any
	replay            []core.Scope
	replayKeys        [][]string
	replayArgs        [][]any
	seq               atomic.Int64 // numbers the requests: a new key each
}

// newBenchRig is a rig over c whose replays cycle through preloaded keys.
func newBenchRig(b *testing.B, c redis.UniversalClient, preloaded int) *benchRig {
	s := newTestStore(b, c, Options{})
	ex, err := idem.New(s)
	if err != nil {
		b.Fatal(err)
	}
	var p [6]byte
	_, _ = rand.Read(p[:])
	r := &benchRig{s: s, ex: ex, prefix: hex.EncodeToString(p[:])}
	if r.reserve, r.complete, err = benchTemplates(ex.Policy()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range preloaded {
		sc := benchScope(r.prefix+"-replay", int64(i))
		if err := r.do(ctx, sc, idem.ResultExecuted); err != nil {
			b.Fatal(err)
		}
		o := s.scoped(sc)
		r.replay = append(r.replay, sc)
		r.replayKeys = append(r.replayKeys, o.keys)
		r.replayArgs = append(r.replayArgs, r.reserveArgs(o))
	}
	return r
}

// benchTemplates are the encoded arguments of a reserve of an absent
// record and of the completion of the attempt it starts, as the driver
// sends them (template).
func benchTemplates(p core.Policy) (reserve, complete []any, err error) {
	rec := core.Record{Scope: benchScope("template", 0)}
	ev := core.Event{Kind: core.EventReserve, Fingerprint: testFP}
	e, tr, ok, err := template(&rec, ev, &p)
	if err != nil || !ok || tr.Write.Kind != core.WriteInsert {
		return nil, nil, fmt.Errorf("the reserve's template: %v %v %s", ok, err, tr.Describe())
	}
	reserve = e.appendArgs(nil)
	ev.Now, ev.Token = time.Now(), 1<<bucketBits
	if _, err := core.Step(&rec, &ev, &p); err != nil {
		return nil, nil, err
	}
	done := core.Event{Kind: core.EventComplete, Token: rec.Token, Response: benchResponse}
	e, tr, ok, err = template(&rec, done, &p)
	if err != nil || !ok || tr.Write.Kind != core.WriteUpdate {
		return nil, nil, fmt.Errorf("the completion's template: %v %v %s", ok, err, tr.Describe())
	}
	return reserve, e.appendArgs(nil), nil
}

func benchScope(prefix string, i int64) core.Scope {
	return core.Scope{Principal: "merchant", UseCase: "payments.create", Key: prefix + "-" + strconv.FormatInt(i, 10) + "-key-0000"}
}

func (r *benchRig) reserveArgs(o *scoped) []any {
	return append([]any{modeInsert, o.m, o.payload, o.b, "0", "0"}, r.reserve...)
}

// do is one request through Executor.Do, which must answer want.
func (r *benchRig) do(ctx context.Context, sc core.Scope, want idem.ResultKind) error {
	res, err := r.ex.Do(ctx, idem.Request{Scope: sc, Fingerprint: testFP}, func(context.Context, idem.Attempt) (idem.Response, error) {
		return benchResponse, nil
	})
	if err != nil || res.Kind != want {
		return fmt.Errorf("Do: %v %v, want %v", res.Kind, err, want)
	}
	return nil
}

func (r *benchRig) doNewKey(ctx context.Context) error {
	return r.do(ctx, benchScope(r.prefix+"-do", r.seq.Add(1)), idem.ResultExecuted)
}

func (r *benchRig) doReplay(ctx context.Context) error {
	return r.do(ctx, r.replay[r.seq.Add(1)%int64(len(r.replay))], idem.ResultReplayed)
}

// rawNewKey runs the driver's two calls for a new key: the reserve's
// insert, then the completion under the version and token it answered.
func (r *benchRig) rawNewKey(ctx context.Context) error {
	return r.rawNewKeyOf(ctx, benchScope(r.prefix+"-raw", r.seq.Add(1)))
}

func (r *benchRig) rawNewKeyOf(ctx context.Context, sc core.Scope) error {
	o := r.s.scoped(sc)
	v, err := r.s.client.EvalSha(ctx, r.s.scripts.write.sha, o.keys, r.reserveArgs(o)...).Slice()
	if err != nil || len(v) != 5 || v[0] != int64(1) {
		return fmt.Errorf("raw insert: %v %v", v, err)
	}
	sec, usec, counter := v[1].(int64), v[2].(int64), v[3].(int64)
	tok := strconv.FormatUint(uint64(token(uint64(counter), o.b)), 16)
	args := append([]any{modeUpdate, o.m, o.payload, o.b, "1", tok}, r.complete...)
	args[6+completeArgToken] = tok
	args[6+completeArgCreated] = timeSpec("=", clockOf(sec, usec))
	v, err = r.s.client.EvalSha(ctx, r.s.scripts.write.sha, o.keys, args...).Slice()
	if err != nil || len(v) != 5 || v[0] != int64(1) {
		return fmt.Errorf("raw completion: %v %v", v, err)
	}
	return nil
}

// rawReplay runs the driver's one call for a replay: the reserve's insert
// of a completed key, which answers the record.
func (r *benchRig) rawReplay(ctx context.Context) error {
	k := r.seq.Add(1) % int64(len(r.replay))
	v, err := r.s.client.EvalSha(ctx, r.s.scripts.write.sha, r.replayKeys[k], r.replayArgs[k]...).Slice()
	if err != nil || len(v) != 5 || v[0] != int64(0) {
		return fmt.Errorf("raw replay: %v %v", v, err)
	}
	if f, ok := v[4].([]any); !ok || len(f) == 0 {
		return fmt.Errorf("raw replay: no record: %v", v)
	}
	return nil
}

// benchTrips fails b unless Do makes exactly the calls the raw loop
// makes, counted on a client of its own (c): two for a new key, one for a
// replay; and unless what the raw loop writes is what Do writes (Do
// replays it).
func benchTrips(b *testing.B, c redis.UniversalClient) {
	counter := new(commandCounter)
	c.AddHook(counter)
	r := newBenchRig(b, c, 10)
	ctx := context.Background()
	sc := benchScope(r.prefix+"-check", 0)
	if err := r.rawNewKeyOf(ctx, sc); err != nil {
		b.Fatal(err)
	}
	if err := r.do(ctx, sc, idem.ResultReplayed); err != nil {
		b.Fatalf("the raw loop's record: %v", err)
	}
	for i, op := range r.benchOps() {
		before := counter.n.Load()
		const requests = 20
		for range requests {
			if err := op.run(ctx); err != nil {
				b.Fatal(err)
			}
		}
		got, want := counter.n.Load()-before, int64(requests*(2-i/2))
		if got != want {
			b.Fatalf("%s: %d commands for %d requests, want %d", op.name, got, requests, want)
		}
	}
}

// commandCounter counts the commands a client sends, alone or in
// pipelines.
type commandCounter struct{ n atomic.Int64 }

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// benchServers are the servers the benchmarks run on, by name.
var benchServers = []struct {
	name   string
	client func(testing.TB) redis.UniversalClient
}{
	{"standalone", func(t testing.TB) redis.UniversalClient { return standaloneClient(t) }},
	{"cluster", func(t testing.TB) redis.UniversalClient { return clusterClient(t) }},
}

// benchOps are the four loads, raw and through Do, by name.
func (r *benchRig) benchOps() []benchOp {
	return []benchOp{
		{"raw-newkey", r.rawNewKey}, {"do-newkey", r.doNewKey},
		{"raw-replay", r.rawReplay}, {"do-replay", r.doReplay},
	}
}

type benchOp struct {
	name string
	run  func(context.Context) error
}

// BenchmarkAlone runs each load alone: 1 client is one goroutine (b.Loop),
// 16 are b.RunParallel's goroutines (SetParallelism). For profiles and
// allocations; the ratios are BenchmarkInterleaved's.
func BenchmarkAlone(b *testing.B) {
	benchEachServer(b, func(b *testing.B, r *benchRig) {
		for _, op := range r.benchOps() {
			for _, clients := range benchClients {
				b.Run(op.name+"/clients="+strconv.Itoa(clients), func(b *testing.B) { benchOne(b, op, clients) })
			}
		}
	})
}

// benchClients are the numbers of concurrent clients.
var benchClients = []int{1, 16}

// benchEachServer runs each on a rig of every server (benchServers),
// after checking there that Do makes the raw loop's calls.
func benchEachServer(b *testing.B, each func(*testing.B, *benchRig)) {
	for _, srv := range benchServers {
		b.Run(srv.name, func(b *testing.B) {
			benchTrips(b, srv.client(b))
			each(b, newBenchRig(b, srv.client(b), benchPreloaded))
		})
	}
}

func benchOne(b *testing.B, op benchOp, clients int) {
	ctx := context.Background()
	b.ReportAllocs()
	if clients == 1 {
		for b.Loop() {
			if err := op.run(ctx); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		procs := runtime.GOMAXPROCS(0)
		if clients%procs != 0 {
			b.Skipf("%d clients on GOMAXPROCS %d", clients, procs)
		}
		b.SetParallelism(clients / procs)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := op.run(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// benchTurn is one load's share of BenchmarkInterleaved.
type benchTurn struct {
	benchOp
	sent   int64
	busy   time.Duration
	cpu    time.Duration // the process's CPU time in its turns
	rounds []float64     // req/s, turn by turn
}

// BenchmarkInterleaved loads the four, raw and through Do, in turn,
// benchRound each, round after round (one round an iteration), from
// exactly clients goroutines, so that a shared machine's load falls on
// all alike. Each round starts with another of the four (the order
// rotates), after a garbage collection. It reports each one's req/s over
// all rounds and the process's CPU time a request (the client's side:
// the servers are other processes), the ratios the targets are about,
// Do/raw for a new key (want >= 0.70 at 16 clients) and for a replay
// (>= 0.80), over all rounds and as the median of the rounds' ratios.
func BenchmarkInterleaved(b *testing.B) {
	benchEachServer(b, func(b *testing.B, r *benchRig) {
		for _, clients := range benchClients {
			b.Run("clients="+strconv.Itoa(clients), func(b *testing.B) { benchInterleaved(b, r, clients) })
		}
	})
}

const benchRound = 250 * time.Millisecond

func benchInterleaved(b *testing.B, r *benchRig, clients int) {
	var turns []*benchTurn
	for _, op := range r.benchOps() {
		turns = append(turns, &benchTurn{benchOp: op})
	}
	for i := 0; b.Loop(); i++ {
		for j := range turns {
			runtime.GC()
			benchTurnRun(b, turns[(i+j)%len(turns)], clients)
		}
	}
	rate := map[string]float64{}
	for _, t := range turns {
		rate[t.name] = float64(t.sent) / t.busy.Seconds()
		b.ReportMetric(rate[t.name], t.name+"-req/s")
		b.ReportMetric(float64(t.cpu.Microseconds())/float64(t.sent), t.name+"-cpu-µs/req")
	}
	for k, load := range []string{"newkey", "replay"} {
		raw, do := turns[2*k], turns[2*k+1]
		b.ReportMetric(rate[do.name]/rate[raw.name], load+"-do/raw")
		ratios := make([]float64, len(raw.rounds))
		for i := range ratios {
			ratios[i] = do.rounds[i] / raw.rounds[i]
		}
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], load+"-do/raw-median")
	}
}

// benchTurnRun runs t from clients goroutines for benchRound.
func benchTurnRun(b *testing.B, t *benchTurn, clients int) {
	ctx := context.Background()
	var sent atomic.Int64
	var wg sync.WaitGroup
	start, cpuStart := time.Now(), cpuTime(b)
	for range clients {
		wg.Go(func() {
			for time.Since(start) < benchRound {
				if err := t.run(ctx); err != nil {
					b.Error(err)
					return
				}
				sent.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	t.sent += sent.Load()
	t.busy += took
	t.cpu += cpuTime(b) - cpuStart
	t.rounds = append(t.rounds, float64(sent.Load())/took.Seconds())
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
