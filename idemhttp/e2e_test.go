package idemhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/fingerprint"
	"github.com/idemkit/idem/idemhttp"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// flakyStore is the memory store that fails every call while down is set.
type flakyStore struct {
	store.Store
	down atomic.Bool
}

var errStoreDown = errors.New("store down (test)")

func (s *flakyStore) Load(ctx context.Context, sc core.Scope) (store.Snapshot, error) {
	if s.down.Load() {
		return store.Snapshot{}, errStoreDown
	}
	return s.Store.Load(ctx, sc)
}

// world is one real http.Server on 127.0.0.1 with a protected POST
// /payments, and the client that talks to it.
type world struct {
	t         *testing.T
	ex        *idem.Executor
	store     *flakyStore
	metrics   *idem.MemMetrics
	url       string
	client    *http.Client
	serverLog *syncBuffer

	executions atomic.Int64
	// behave decides what the handler does; the default answers 201.
	behave func(w http.ResponseWriter, r *http.Request, n int64)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type worldOptions struct {
	policy func(*idem.Policy)
	route  func(*idemhttp.Route)
}

func principalOf(r *http.Request) (string, error) {
	if p := r.Header.Get("X-Principal"); p != "" {
		return p, nil
	}
	return "", errors.New("no X-Principal")
}

func newWorld(t *testing.T, o worldOptions) *world {
	t.Helper()
	w := &world{t: t, metrics: &idem.MemMetrics{}, serverLog: &syncBuffer{}}
	w.store = &flakyStore{Store: store.HideApplier(memstore.New(memstore.Options{}))}
	p := idem.DefaultPolicy()
	if o.policy != nil {
		o.policy(&p)
	}
	ex, err := idem.New(w.store, idem.WithPolicy(p), idem.WithMetrics(w.metrics))
	if err != nil {
		t.Fatal(err)
	}
	w.ex = ex
	spec, err := fingerprint.NewSpec("payments.create", 1, fingerprint.Exclude("/clientTime"))
	if err != nil {
		t.Fatal(err)
	}
	rt := idemhttp.Route{
		UseCase: "payments.create", Principal: principalOf, Fingerprint: spec, BodyBytesMax: 4 << 10,
		Tenant:        func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
		ReplayHeaders: []string{"X-Payment-Id"},
	}
	if o.route != nil {
		o.route(&rt)
	}
	protect, err := idemhttp.New(ex, rt)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /payments", protect(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		n := w.executions.Add(1)
		if w.behave != nil {
			w.behave(rw, r, n)
			return
		}
		body, _ := io.ReadAll(r.Body)
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Location", fmt.Sprintf("/payments/%d", n))
		rw.Header().Set("X-Payment-Id", fmt.Sprint(n))
		rw.Header().Set("X-Not-Replayed", "only-the-first")
		rw.WriteHeader(http.StatusCreated)
		fmt.Fprintf(rw, `{"id":%d,"request":%s}`, n, body)
	})))
	mux.HandleFunc("GET /stream", func(rw http.ResponseWriter, r *http.Request) {
		rw.Write([]byte("first\n"))
		if err := http.NewResponseController(rw).Flush(); err != nil {
			t.Errorf("unprotected route: flush: %v", err)
		}
		<-r.Context().Done() // the client hangs up after the first chunk
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ErrorLog: log.New(w.serverLog, "", 0), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	w.url = "http://" + ln.Addr().String()
	w.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	return w
}

type answer struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func (w *world) post(key, principal, tenant, contentType, body string) answer {
	req, err := http.NewRequest(http.MethodPost, w.url+"/payments", strings.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set(idemhttp.DefaultKeyHeader, key)
	}
	if principal != "" {
		req.Header.Set("X-Principal", principal)
	}
	if tenant != "" {
		req.Header.Set("X-Tenant", tenant)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

const (
	key1    = "8e03978e-40d5-43e8-bc93-6894a57f9324"
	payment = `{"customerId":"c-1","amountCents":1250,"currency":"EUR"}`
)

func (w *world) pay(key string) answer { return w.post(key, "alice", "", "application/json", payment) }

// problem checks a answers the problem code with status, and returns it.
func (a answer) problem(t *testing.T, status int, code idem.Code) idemhttp.Problem {
	t.Helper()
	if a.err != nil {
		t.Fatalf("request failed: %v", a.err)
	}
	var p idemhttp.Problem
	if a.status != status || a.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("got %d %q %s, want %d problem %s", a.status, a.header.Get("Content-Type"), a.body, status, code)
	}
	if err := json.Unmarshal(a.body, &p); err != nil {
		t.Fatalf("problem body %s: %v", a.body, err)
	}
	if p.Code != code || p.Type != idemhttp.ProblemTypeBase+string(code) || p.Status != status || p.Title == "" {
		t.Fatalf("problem %+v, want code %s, status %d", p, code, status)
	}
	return p
}

func (a answer) retryAfter(t *testing.T) {
	t.Helper()
	if ra := a.header.Get("Retry-After"); ra == "" || ra == "0" || strings.ContainsAny(ra, ".-") {
		t.Fatalf("Retry-After %q, want whole seconds, at least 1", ra)
	}
}

func TestConcurrentIdenticalRequestsExecuteOnce(t *testing.T) {
	w := newWorld(t, worldOptions{policy: func(p *idem.Policy) { p.InFlightWait = 50 * time.Millisecond }})
	release := make(chan struct{})
	w.behave = func(rw http.ResponseWriter, r *http.Request, n int64) {
		<-release // hold the one execution so that the others meet it in flight
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusCreated)
		fmt.Fprintf(rw, `{"id":%d}`, n)
	}
	const clients = 50
	answers := make([]answer, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { answers[i] = w.pay(key1) })
	}
	time.Sleep(300 * time.Millisecond) // most see 409 while it runs; the rest come back replayed
	close(release)
	wg.Wait()
	executed, replayed, inFlight := 0, 0, 0
	for _, a := range answers {
		switch {
		case a.err != nil:
			t.Fatalf("request failed: %v", a.err)
		case a.status == http.StatusCreated && a.header.Get(idemhttp.ReplayedHeader) == "true":
			replayed++
		case a.status == http.StatusCreated:
			executed++
		case a.status == http.StatusConflict:
			a.problem(t, http.StatusConflict, idem.CodeInProgress)
			a.retryAfter(t)
			inFlight++
		default:
			t.Fatalf("unexpected answer %d %s", a.status, a.body)
		}
		if a.status == http.StatusCreated && string(a.body) != `{"id":1}` {
			t.Fatalf("body %s, want the one execution's", a.body)
		}
	}
	if executed != 1 || w.executions.Load() != 1 {
		t.Fatalf("%d answers executed, handler ran %d times; want 1 and 1", executed, w.executions.Load())
	}
	t.Logf("50 concurrent: 1 executed, %d replayed, %d in flight (409)", replayed, inFlight)
	if again := w.pay(key1); again.status != http.StatusCreated || again.header.Get(idemhttp.ReplayedHeader) != "true" {
		t.Fatalf("after it finished: %d, want a replay", again.status)
	}
}

func TestInFlightAcceptedByPolicy(t *testing.T) {
	w := newWorld(t, worldOptions{policy: func(p *idem.Policy) {
		p.InFlightWait, p.InFlightAnswer, p.RetryAfter = 0, core.InFlightAccepted, 1500*time.Millisecond
	}})
	started, release := make(chan struct{}), make(chan struct{})
	w.behave = func(rw http.ResponseWriter, r *http.Request, n int64) {
		close(started)
		<-release
		rw.WriteHeader(http.StatusCreated)
	}
	done := make(chan answer)
	go func() { done <- w.pay(key1) }()
	<-started
	a := w.pay(key1)
	close(release)
	<-done
	a.problem(t, http.StatusAccepted, idem.CodeInProgress)
	if a.header.Get("Retry-After") != "2" {
		t.Fatalf("Retry-After %q for 1.5 s, want 2 (rounded up)", a.header.Get("Retry-After"))
	}
}

func TestAnotherPayloadIs422(t *testing.T) {
	w := newWorld(t, worldOptions{})
	if a := w.pay(key1); a.status != http.StatusCreated {
		t.Fatalf("first: %d %s", a.status, a.body)
	}
	// Same request: key order, white space and an excluded field do not count.
	same := `{ "currency":"EUR", "amountCents":1250, "customerId":"c-1", "clientTime":"12:00" }`
	if a := w.post(key1, "alice", "", "application/json", same); a.status != http.StatusCreated || a.header.Get(idemhttp.ReplayedHeader) != "true" {
		t.Fatalf("the same payment written differently: %d %s, want a replay", a.status, a.body)
	}
	other := `{"customerId":"c-1","amountCents":1251,"currency":"EUR"}`
	w.post(key1, "alice", "", "application/json", other).problem(t, http.StatusUnprocessableEntity, idem.CodeKeyMisuse)
	// The same bytes as another media type are another request.
	w.post(key1, "alice", "", "text/plain", payment).problem(t, http.StatusUnprocessableEntity, idem.CodeKeyMisuse)
	if n := w.executions.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
}

func TestPanicLeavesKeyUnknownAndNeverReruns(t *testing.T) {
	for _, value := range []any{"boom (test)", http.ErrAbortHandler} {
		t.Run(fmt.Sprint(value), func(t *testing.T) {
			w := newWorld(t, worldOptions{})
			w.behave = func(rw http.ResponseWriter, r *http.Request, n int64) {
				rw.WriteHeader(http.StatusCreated)
				panic(value)
			}
			if a := w.pay(key1); a.err == nil {
				t.Fatalf("a panic answered %d %s; net/http should have dropped the connection", a.status, a.body)
			}
			for range 3 {
				a := w.pay(key1)
				a.problem(t, http.StatusConflict, idem.CodeOutcomeUnknown)
				a.retryAfter(t)
			}
			if n := w.executions.Load(); n != 1 {
				t.Fatalf("handler ran %d times, want 1", n)
			}
			logged := strings.Contains(w.serverLog.String(), "boom (test)")
			if wantLogged := value != http.ErrAbortHandler; logged != wantLogged {
				t.Fatalf("net/http logged the panic: %v, want %v (ErrAbortHandler is silent): %s", logged, wantLogged, w.serverLog.String())
			}
		})
	}
}

func TestStoreDownIs503AndHandlerNeverRuns(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.store.down.Store(true)
	a := w.pay(key1)
	a.problem(t, http.StatusServiceUnavailable, idem.CodeStoreUnavailable)
	a.retryAfter(t)
	if n := w.executions.Load(); n != 0 {
		t.Fatalf("handler ran %d times with the store down", n)
	}
	if strings.Contains(string(a.body), errStoreDown.Error()) {
		t.Fatalf("the store's error reached the client: %s", a.body)
	}
	w.store.down.Store(false)
	if a := w.pay(key1); a.status != http.StatusCreated || w.executions.Load() != 1 {
		t.Fatalf("after the store is back: %d, %d executions", a.status, w.executions.Load())
	}
}

// wire is a response as a client compares it: status, body and every
// header but Date (the server's clock).
func wire(a answer) string {
	var b strings.Builder
	h := a.header.Clone()
	h.Del("Date")
	fmt.Fprintf(&b, "%d\n", a.status)
	h.Write(&b)
	b.Write(a.body)
	return b.String()
}

func TestReplayIsByteIdentical(t *testing.T) {
	w := newWorld(t, worldOptions{})
	first := w.pay(key1)
	if first.status != http.StatusCreated || first.header.Get("X-Not-Replayed") == "" {
		t.Fatalf("first: %d %v", first.status, first.header)
	}
	second, third := w.pay(key1), w.pay(key1)
	if !bytes.Equal(second.body, first.body) || second.status != first.status {
		t.Fatalf("replay %d %s, first %d %s", second.status, second.body, first.status, first.body)
	}
	for _, name := range []string{"Content-Type", "Location", "X-Payment-Id", "Content-Length"} {
		if got, want := second.header.Values(name), first.header.Values(name); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("replayed %s %q, first %q", name, got, want)
		}
	}
	if second.header.Get("X-Not-Replayed") != "" || second.header.Get(idemhttp.ReplayedHeader) != "true" {
		t.Errorf("replay headers %v", second.header)
	}
	// The first answer, less what is not stored, plus the replay marker:
	// that is every replay, byte for byte.
	want := first
	want.header = first.header.Clone()
	want.header.Del("X-Not-Replayed")
	want.header.Set(idemhttp.ReplayedHeader, "true")
	if wire(second) != wire(want) || wire(third) != wire(second) {
		t.Fatalf("replays differ:\nwant:\n%s\nsecond:\n%s\nthird:\n%s", wire(want), wire(second), wire(third))
	}
}

func TestNoCrossScopeReplay(t *testing.T) {
	w := newWorld(t, worldOptions{})
	seen := map[string]bool{}
	for _, who := range [][2]string{{"alice", ""}, {"alice", "tenant-a"}, {"alice", "tenant-b"}, {"bob", "tenant-a"}} {
		a := w.post(key1, who[0], who[1], "application/json", payment)
		if a.status != http.StatusCreated || a.header.Get(idemhttp.ReplayedHeader) != "" || seen[string(a.body)] {
			t.Fatalf("%v: %d %s replayed=%q: another scope's record answered", who, a.status, a.body, a.header.Get(idemhttp.ReplayedHeader))
		}
		seen[string(a.body)] = true
	}
	if n := w.executions.Load(); n != 4 {
		t.Fatalf("%d executions, want 4 (one a scope)", n)
	}
}

func TestRefusals(t *testing.T) {
	w := newWorld(t, worldOptions{})
	big := `{"customerId":"` + strings.Repeat("x", 5<<10) + `"}`
	w.post(key1, "alice", "", "application/json", big).problem(t, http.StatusRequestEntityTooLarge, idemhttp.CodeRequestTooLarge)
	// Without a declared length too (chunked).
	req, _ := http.NewRequest(http.MethodPost, w.url+"/payments", io.MultiReader(strings.NewReader(big)))
	req.Header.Set(idemhttp.DefaultKeyHeader, key1)
	req.Header.Set("X-Principal", "alice")
	resp, err := w.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	answer{status: resp.StatusCode, header: resp.Header, body: b}.problem(t, http.StatusRequestEntityTooLarge, idemhttp.CodeRequestTooLarge)

	w.pay("").problem(t, http.StatusBadRequest, idem.CodeInvalidKey)
	w.pay("too-short").problem(t, http.StatusBadRequest, idem.CodeInvalidKey)
	w.pay(`"unterminated-0123456789`).problem(t, http.StatusBadRequest, idem.CodeInvalidKey)
	w.pay(strings.Repeat("k", 256)).problem(t, http.StatusBadRequest, idem.CodeInvalidKey)
	w.post(key1, "", "", "application/json", payment).problem(t, http.StatusUnauthorized, idemhttp.CodeUnauthenticated)
	w.post(key1, "alice", "", "application/json", `{"a":1,"a":2}`).problem(t, http.StatusBadRequest, idem.CodeInvalidRequest)
	if n := w.executions.Load(); n != 0 {
		t.Fatalf("handler ran %d times for refused requests", n)
	}
	// A structured-field key is the same key as its bare form.
	if a := w.pay(`"` + key1 + `"`); a.status != http.StatusCreated {
		t.Fatalf("quoted key: %d %s", a.status, a.body)
	}
	if a := w.pay(key1); a.header.Get(idemhttp.ReplayedHeader) != "true" {
		t.Fatalf("bare key after the quoted one: %d, want a replay", a.status)
	}
}

func TestOptionalKeyPassesThrough(t *testing.T) {
	w := newWorld(t, worldOptions{route: func(r *idemhttp.Route) { r.KeyOptional = true }})
	for range 2 {
		if a := w.pay(""); a.status != http.StatusCreated || a.header.Get(idemhttp.ReplayedHeader) != "" {
			t.Fatalf("no key on an optional route: %d", a.status)
		}
	}
	if n := w.executions.Load(); n != 2 {
		t.Fatalf("%d executions, want 2 (unprotected)", n)
	}
	w.pay("short").problem(t, http.StatusBadRequest, idem.CodeInvalidKey) // a bad key is refused all the same
}

func TestResponseOverLimitReachesClientAndNeverReruns(t *testing.T) {
	w := newWorld(t, worldOptions{policy: func(p *idem.Policy) { p.ResponseBytesMax = 1 << 10 }})
	big := strings.Repeat("p", 3<<10)
	w.behave = func(rw http.ResponseWriter, r *http.Request, n int64) {
		rw.Header().Set("Content-Type", "text/plain")
		for i := 0; i < len(big); i += 100 { // many writes: the limit is passed in the middle of one
			io.WriteString(rw, big[i:min(i+100, len(big))])
		}
	}
	if a := w.pay(key1); a.status != http.StatusOK || string(a.body) != big {
		t.Fatalf("over the limit: %d, %d bytes, want 200 and all %d", a.status, len(a.body), len(big))
	}
	w.pay(key1).problem(t, http.StatusConflict, idem.CodeOutcomeUnknown)
	if n := w.executions.Load(); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
	if got := w.metrics.Total(idem.CounterReconcileScheduled); got != 1 {
		t.Fatalf("reconcile.scheduled %d, want 1 (the key is left unknown)", got)
	}
}

func TestHandlerVerdicts(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.behave = func(rw http.ResponseWriter, r *http.Request, n int64) {
		at, ok := idemhttp.AttemptOf(r)
		if !ok || at.Token == 0 || at.Scope.Key != key1 && at.Scope.Key != key1[:20]+"-other-0000" {
			t.Errorf("AttemptOf: %+v %v", at, ok)
		}
		if n == 1 {
			idemhttp.NotExecuted(r, errors.New("gateway refused the connection"))
			rw.WriteHeader(http.StatusBadGateway)
			return
		}
		if n == 3 {
			idemhttp.OutcomeUnknown(r, errors.New("gateway timed out"))
			rw.WriteHeader(http.StatusGatewayTimeout)
			return
		}
		rw.WriteHeader(http.StatusCreated)
	}
	if a := w.pay(key1); a.status != http.StatusBadGateway {
		t.Fatalf("not executed: this client got %d, want the handler's 502", a.status)
	}
	if a := w.pay(key1); a.status != http.StatusCreated || a.header.Get(idemhttp.ReplayedHeader) != "" {
		t.Fatalf("retry after NotExecuted: %d, want a new execution", a.status)
	}
	other := key1[:20] + "-other-0000"
	if a := w.pay(other); a.status != http.StatusGatewayTimeout {
		t.Fatalf("unknown: this client got %d, want the handler's 504", a.status)
	}
	w.pay(other).problem(t, http.StatusConflict, idem.CodeOutcomeUnknown)
	if n := w.executions.Load(); n != 3 {
		t.Fatalf("%d executions, want 3", n)
	}
	if err := idemhttp.NotExecuted(httptest.NewRequest("POST", "/", nil), nil); !errors.Is(err, idemhttp.ErrUnprotected) {
		t.Fatalf("NotExecuted outside the middleware: %v", err)
	}
}

func TestStreamingRouteWithoutMiddleware(t *testing.T) {
	w := newWorld(t, worldOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.url+"/stream", nil)
	resp, err := w.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line := make([]byte, 6)
	if _, err := io.ReadFull(resp.Body, line); err != nil || string(line) != "first\n" {
		t.Fatalf("first chunk %q, %v: the handler is still running, so it was flushed", line, err)
	}
}
