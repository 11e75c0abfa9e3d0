package idemhttp_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemhttp"
	memstore "github.com/idemkit/idem/store/mem"
)

// benchBody is a 1 KB JSON payment request.
var benchBody = func() []byte {
	b := []byte(`{"customerId":"c-1","amountCents":1250,"currency":"EUR","note":"`)
	b = append(b, strings.Repeat("n", 1024-len(b)-2)...)
	return append(b, `"}`...)
}()

var benchAnswer = []byte(`{"id":"pay_1","customerId":"c-1","amountCents":1250,"currency":"EUR","status":"succeeded"}`)

// paymentHandler is the handler measured bare and under the middleware: it
// reads the body and answers 201 with a small JSON payment.
func paymentHandler(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Location", "/payments/pay_1")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(benchAnswer)
}

// benchHandlers are the three servers compared: bare, and the same handler
// under the middleware over one memory store.
func benchHandlers(b *testing.B) (bare, protected http.Handler) {
	ex, err := idem.New(memstore.New(memstore.Options{}))
	if err != nil {
		b.Fatal(err)
	}
	protect, err := idemhttp.New(ex, idemhttp.Route{UseCase: "payments.create", Principal: principalOf})
	if err != nil {
		b.Fatal(err)
	}
	return http.HandlerFunc(paymentHandler), protect(http.HandlerFunc(paymentHandler))
}

// keys hands out keys: the same one (replay) or a fresh one per request
// (new key).
type keys struct {
	fresh bool
	n     atomic.Uint64
}

func (k *keys) next() string {
	if !k.fresh {
		return key1
	}
	return "bench-key-000000-" + strconv.FormatUint(k.n.Add(1), 10)
}

var benchCases = []struct {
	name      string
	protected bool
	fresh     bool
}{{"bare", false, false}, {"replay", true, false}, {"newkey", true, true}}

// BenchmarkInProcess serves each request through httptest: the middleware's
// own cost, without the network.
func BenchmarkInProcess(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			bare, protected := benchHandlers(b)
			h := bare
			if c.protected {
				h = protected
			}
			k := &keys{fresh: c.fresh}
			serve := func() int {
				r := httptest.NewRequest(http.MethodPost, "/payments", bytes.NewReader(benchBody))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("X-Principal", "alice")
				r.Header.Set(idemhttp.KeyHeaderDefault, k.next())
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w.Code
			}
			if code := serve(); code != http.StatusCreated { // the first execution, outside the timing
				b.Fatalf("status %d", code)
			}
			b.ReportAllocs()
			for b.Loop() {
				if code := serve(); code != http.StatusCreated {
					b.Fatalf("status %d", code)
				}
			}
		})
	}
}

// BenchmarkLoopback is a Go load loop over 127.0.0.1: a real http.Server
// and keep-alive clients, GOMAXPROCS*4 requests in flight (RunParallel's
// goroutines each send one request at a time). It reports req/s; allocs/op
// count the client's side too.
func BenchmarkLoopback(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			url, srv := benchServer(b, c.protected)
			const parallelism = 4
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: parallelism * 64, DisableCompression: true}}
			k := &keys{fresh: c.fresh}
			send := func() error { return sendPayment(client, url, k.next()) }
			if err := send(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetParallelism(parallelism)
			b.ResetTimer() // the server's start and the first request are not the load
			start, cpuStart := time.Now(), cpuTime(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := send(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			elapsed, cpu := time.Since(start), cpuTime(b)-cpuStart
			b.StopTimer() // closing is not the load: Shutdown would wait up to 5 s for a dialled, unused connection
			client.CloseIdleConnections()
			srv.Close()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
			// CPU time of the whole process (client and server) per request:
			// on a shared machine it moves less than req/s, which other
			// processes' load drags down.
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/req")
		})
	}
}

// benchServer serves the bare or the protected handler on 127.0.0.1 and
// returns its URL; the caller closes it.
func benchServer(b *testing.B, protected bool) (url string, srv *http.Server) {
	bare, wrapped := benchHandlers(b)
	h := bare
	if protected {
		h = wrapped
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String() + "/payments", srv
}

// sendPayment posts the benchmark's request with key and drains the answer.
func sendPayment(client *http.Client, url, key string) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(benchBody))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Principal", "alice")
	req.Header.Set(idemhttp.KeyHeaderDefault, key)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return &statusError{resp.StatusCode}
	}
	return nil
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type statusError struct{ code int }

func (e *statusError) Error() string { return "status " + strconv.Itoa(e.code) }

// BenchmarkLoopbackInterleaved runs the three servers side by side and
// loads them in turn, 200 ms each, round after round (one round an
// iteration), so that a shared machine's load falls on all three alike.
// Each round starts with another of the three (the order rotates), and a
// garbage collection runs before each turn, so that no target pays for the
// garbage of the one before it. It reports each one's req/s over all
// rounds, the two ratios the targets are about, replay/bare (want >= 0.8)
// and newkey/bare (want >= 0.6), and the median of each ratio taken round
// by round (-median: a burst of the machine's other load skews one round,
// not the median), and the ratio of the process's CPU time per request
// (-cpu: what the machine's other processes do not move).
func BenchmarkLoopbackInterleaved(b *testing.B) {
	const round, inFlight = 200 * time.Millisecond, 8
	type target struct {
		name   string
		url    string
		k      *keys
		sent   atomic.Int64
		busy   time.Duration
		cpu    time.Duration // the process's CPU time (client and server) in its turns
		rounds []float64     // req/s, round by round
	}
	var targets []*target
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: inFlight * 2, DisableCompression: true}}
	for _, c := range benchCases {
		url, srv := benchServer(b, c.protected)
		defer srv.Close()
		targets = append(targets, &target{name: c.name, url: url, k: &keys{fresh: c.fresh}})
	}
	send := func(t *target) error { return sendPayment(client, t.url, t.k.next()) }
	for _, t := range targets {
		if err := send(t); err != nil { // the replay's execution, and warm connections
			b.Fatal(err)
		}
	}
	for i := 0; b.Loop(); i++ {
		for j := range targets {
			t := targets[(i+j)%len(targets)]
			runtime.GC()
			start, cpuStart := time.Now(), cpuTime(b)
			before := t.sent.Load()
			var wg sync.WaitGroup
			for range inFlight {
				wg.Go(func() {
					for time.Since(start) < round {
						if err := send(t); err != nil {
							b.Error(err)
							return
						}
						t.sent.Add(1)
					}
				})
			}
			wg.Wait()
			took := time.Since(start)
			t.busy += took
			t.cpu += cpuTime(b) - cpuStart
			t.rounds = append(t.rounds, float64(t.sent.Load()-before)/took.Seconds())
		}
	}
	rate, cpuPerReq := map[string]float64{}, map[string]float64{}
	perRound := map[string][]float64{}
	for _, t := range targets {
		rate[t.name] = float64(t.sent.Load()) / t.busy.Seconds()
		cpuPerReq[t.name] = float64(t.cpu.Microseconds()) / float64(t.sent.Load())
		perRound[t.name] = t.rounds
		b.ReportMetric(rate[t.name], t.name+"-req/s")
		b.ReportMetric(cpuPerReq[t.name], t.name+"-cpu-µs/req")
	}
	for _, name := range []string{"replay", "newkey"} {
		b.ReportMetric(rate[name]/rate["bare"], name+"/bare")
		// With the cores saturated, req/s is cores / CPU per request: the
		// ratio of CPU per request is the req/s ratio a machine without
		// other load would show, and other processes do not move it.
		b.ReportMetric(cpuPerReq["bare"]/cpuPerReq[name], name+"/bare-cpu")
		ratios := make([]float64, len(perRound["bare"]))
		for i, bare := range perRound["bare"] {
			ratios[i] = perRound[name][i] / bare
		}
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], name+"/bare-median")
	}
	client.CloseIdleConnections()
}
