package idemhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/fingerprint"
	"github.com/idemkit/idem/idemhttp"
)

// world is one real http.Server on 127.0.0.1 over one store (a backend),
// and the client that talks to it. Its routes, each under the middleware:
//
//	POST /payments               the payment route
//	POST /accounts/{id}/payments a path pattern
//	/accounts/{id}               every method: the middleware picks POST and PATCH
//
// and GET /stream, a streaming route without it.
type world struct {
	t         *testing.T
	ex        *idem.Executor
	setDown   func(bool) // the store's outage switch
	metrics   *idem.MetricsMem
	url       string
	client    *http.Client
	serverLog *syncBuffer

	executions atomic.Int64
	// behave decides what the handler does; the default answers 201 with
	// the request's path value, method and body echoed.
	behave func(w http.ResponseWriter, r *http.Request, n int64)

	mu       sync.Mutex
	finished []served // what each request was answered with, as it finished
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

func newWorld(t *testing.T, b backend, o worldOptions) *world {
	t.Helper()
	w := &world{t: t, metrics: &idem.MetricsMem{}, serverLog: &syncBuffer{}}
	st, setDown := b.open(t)
	w.setDown = setDown
	p := idem.PolicyDefault()
	if o.policy != nil {
		o.policy(&p)
	}
	ex, err := idem.New(st, idem.WithPolicy(p), idem.WithMetrics(w.metrics))
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
	handler := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
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
		fmt.Fprintf(rw, `{"id":%d,"account":%q,"method":%q,"request":%s}`, n, r.PathValue("id"), r.Method, body)
	})
	mux := http.NewServeMux()
	mux.Handle("POST /payments", protect(handler))
	mux.Handle("POST /accounts/{id}/payments", protect(handler))
	mux.Handle("/accounts/{id}", protect(handler))
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
	srv := &http.Server{Handler: w.observe(mux), ErrorLog: log.New(w.serverLog, "", 0), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	w.url = "http://" + ln.Addr().String()
	w.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	t.Cleanup(w.client.CloseIdleConnections)
	return w
}

// served is what the server answered one request, as the server wrote it:
// the status, the Retry-After header and the first bytes of the body.
type served struct {
	status     int
	retryAfter string
	body       string
}

// observe notes what each request was answered with once the server's
// handler returns, whether or not a client is still there to read it. Its
// writer unwraps to the server's, so http.ResponseController reaches the
// connection through it.
func (w *world) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: rw}
		defer func() {
			w.mu.Lock()
			w.finished = append(w.finished, served{sw.status, rw.Header().Get("Retry-After"), string(sw.head)})
			w.mu.Unlock()
		}()
		next.ServeHTTP(sw, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
	head   []byte // the first bytes of the body
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	s.head = append(s.head, p[:min(len(p), 1<<10-len(s.head))]...)
	return s.ResponseWriter.Write(p)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// waitFinished waits until n requests have finished on the server, and
// returns what they were answered with.
func (w *world) waitFinished(n int) []served {
	w.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		w.mu.Lock()
		got := slices.Clone(w.finished)
		w.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%d requests finished on the server, want %d", len(got), n)
		}
	}
}

type answer struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// call is one request to the world.
type call struct {
	method, path           string
	key, principal, tenant string
	contentType, body      string
	chunked                bool // no Content-Length: the body is sent chunked
	header                 http.Header
	ctx                    context.Context
}

func (w *world) send(c call) answer {
	var body io.Reader = strings.NewReader(c.body)
	if c.chunked {
		body = io.MultiReader(body) // hides the length from net/http
	}
	if c.ctx == nil {
		c.ctx = context.Background()
	}
	req, err := http.NewRequestWithContext(c.ctx, c.method, w.url+c.path, body)
	if err != nil {
		w.t.Fatal(err)
	}
	for name, vs := range c.header {
		req.Header[name] = vs
	}
	for name, v := range map[string]string{idemhttp.KeyHeaderDefault: c.key, "X-Principal": c.principal, "X-Tenant": c.tenant, "Content-Type": c.contentType} {
		if v != "" {
			req.Header.Set(name, v)
		}
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

func (w *world) post(key, principal, tenant, contentType, body string) answer {
	return w.send(call{method: http.MethodPost, path: "/payments", key: key, principal: principal, tenant: tenant, contentType: contentType, body: body})
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

// retryAfter checks a problem's Retry-After: whole seconds (delay-seconds,
// RFC 9110: digits only), at least 1, and the same number as the body's
// retryAfterSeconds.
func (a answer) retryAfter(t *testing.T) {
	t.Helper()
	checkRetryAfter(t, a.header.Get("Retry-After"), a.body)
}

func checkRetryAfter(t *testing.T, header string, body []byte) {
	t.Helper()
	n, err := strconv.ParseInt(header, 10, 64)
	if err != nil || n < 1 || strings.TrimLeft(header, "0123456789") != "" {
		t.Fatalf("Retry-After %q, want whole seconds, at least 1", header)
	}
	var p idemhttp.Problem
	if err := json.Unmarshal(body, &p); err != nil || p.RetryAfterSeconds != n {
		t.Fatalf("problem %s (%v): retryAfterSeconds %d, Retry-After %d", body, err, p.RetryAfterSeconds, n)
	}
}

func e2eConcurrentIdenticalRequestsExecuteOnce(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{policy: func(p *idem.Policy) { p.InFlightWait = 50 * time.Millisecond }})
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

func e2eInFlightAcceptedByPolicy(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{policy: func(p *idem.Policy) {
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

// takeRawTypes is a route option: JSON and the types the suite sends raw.
func takeRawTypes(rt *idemhttp.Route) {
	rt.MediaTypes = []string{"application/json", "*/*+json", "text/plain", "text/csv", "application/octet-stream"}
}

func e2eAnotherPayloadIs422(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{route: takeRawTypes})
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
	// A body that is not JSON counts as its media type and its raw bytes:
	// the media type in another spelling is the same request, another
	// media type or another byte is not.
	const key2, csv = "3c1bd1a4-6f0e-4b7e-9d55-1e0c2f9a7b11", "customer,amount\nc-1,1250\n"
	if a := w.post(key2, "alice", "", "text/csv; charset=utf-8", csv); a.status != http.StatusCreated || a.header.Get(idemhttp.ReplayedHeader) != "" {
		t.Fatalf("a CSV body: %d %s", a.status, a.body)
	}
	if a := w.post(key2, "alice", "", "Text/CSV;Charset=utf-8", csv); a.status != http.StatusCreated || a.header.Get(idemhttp.ReplayedHeader) != "true" {
		t.Fatalf("the same CSV, its media type spelled otherwise: %d %s, want a replay", a.status, a.body)
	}
	w.post(key2, "alice", "", "application/octet-stream", csv).problem(t, http.StatusUnprocessableEntity, idem.CodeKeyMisuse)
	w.post(key2, "alice", "", "text/csv; charset=utf-8", csv+" ").problem(t, http.StatusUnprocessableEntity, idem.CodeKeyMisuse)
	if n := w.executions.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
}

func e2ePanicLeavesKeyUnknownAndNeverReruns(t *testing.T, b backend) {
	for _, value := range []any{"boom (test)", http.ErrAbortHandler} {
		t.Run(fmt.Sprint(value), func(t *testing.T) {
			w := newWorld(t, b, worldOptions{})
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

func e2eStoreDownIs503AndHandlerNeverRuns(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{})
	w.setDown(true)
	for range 2 {
		a := w.pay(key1)
		a.problem(t, http.StatusServiceUnavailable, idem.CodeStoreUnavailable)
		a.retryAfter(t)
		// Neither the store's error nor where it lives reaches the client.
		for _, leak := range []string{errStoreDown.Error(), "pgxstore", "127.0.0.1", "dial", "connect"} {
			if strings.Contains(string(a.body), leak) {
				t.Fatalf("the store's error reached the client (%q): %s", leak, a.body)
			}
		}
	}
	if n := w.executions.Load(); n != 0 {
		t.Fatalf("handler ran %d times with the store down", n)
	}
	if n := w.metrics.Total(idem.CounterStoreError); n == 0 {
		t.Fatal("no store error counted for an outage")
	}
	w.setDown(false)
	// Back up: the key was never reserved, so it executes. A pool may
	// still hold a connection the outage broke: that request is refused
	// as the outage's were (503, nothing run), and the retry goes through.
	for attempt := 0; ; attempt++ {
		a := w.pay(key1)
		if a.status == http.StatusServiceUnavailable && attempt < 5 {
			continue
		}
		if a.status != http.StatusCreated || a.header.Get(idemhttp.ReplayedHeader) != "" || w.executions.Load() != 1 {
			t.Fatalf("after the store is back: %d %s, %d executions", a.status, a.body, w.executions.Load())
		}
		t.Logf("back up: executed after %d refusals", attempt)
		break
	}
}

// e2eClientGoneBeforeAnythingRan: a real client sends its request and
// hangs up while the server is still authenticating it (the tenant
// extractor waits for that), so the request's context is done before the
// executor runs. Nothing is counted (no store error, no reserve), nothing
// is reserved, the handler does not run, and the key executes afterwards.
func e2eClientGoneBeforeAnythingRan(t *testing.T, b backend) {
	entered := make(chan struct{})
	logs := &logCapture{}
	w := newWorld(t, b, worldOptions{route: func(rt *idemhttp.Route) {
		rt.Logger = slog.New(logs)
		rt.Tenant = func(r *http.Request) (string, error) {
			if r.Header.Get("X-Test-Hang-Up") != "" {
				close(entered)
				<-r.Context().Done() // net/http cancels it when the connection closes
			}
			return r.Header.Get("X-Tenant"), nil
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan answer, 1)
	go func() {
		// No body: the server watches the connection from the start, as it
		// does once a body has been read.
		gone <- w.send(call{method: http.MethodPost, path: "/payments", key: key1, principal: "alice",
			header: http.Header{"X-Test-Hang-Up": {"1"}}, ctx: ctx})
	}()
	<-entered
	cancel() // the transport closes the connection
	if a := <-gone; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("the client that hung up got %d %v", a.status, a.err)
	}
	// The server's answer, that the client no longer reads: not the
	// store's failure (idempotency_store_unavailable) but request_cancelled.
	got := w.waitFinished(1)[0]
	var p idemhttp.Problem
	if err := json.Unmarshal([]byte(got.body), &p); err != nil || got.status != http.StatusServiceUnavailable ||
		p.Code != idemhttp.CodeRequestCancelled || p.Type != idemhttp.ProblemTypeBase+string(idemhttp.CodeRequestCancelled) {
		t.Fatalf("the server answered the gone client %d %s (%v), want 503 request_cancelled", got.status, got.body, err)
	}
	checkRetryAfter(t, got.retryAfter, []byte(got.body))
	checkLogged(t, logs.all(), 1, idemhttp.CodeRequestCancelled, key1, "alice")
	for _, c := range idem.Counters() {
		if n := w.metrics.Total(c); n != 0 {
			t.Errorf("%s = %d, want nothing counted for a client gone before anything ran", c.Name(), n)
		}
	}
	if a := w.pay(key1); a.status != http.StatusCreated || a.header.Get(idemhttp.ReplayedHeader) != "" || w.executions.Load() != 1 {
		t.Fatalf("the same key afterwards: %d %s, %d executions; want a first execution", a.status, a.body, w.executions.Load())
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

func e2eReplayIsByteIdentical(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{})
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

func e2eNoCrossScopeReplay(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{})
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

func e2eRefusals(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{})
	big := `{"customerId":"` + strings.Repeat("x", 5<<10) + `"}`
	w.post(key1, "alice", "", "application/json", big).problem(t, http.StatusRequestEntityTooLarge, idemhttp.CodeRequestTooLarge)
	// Without a declared length too (chunked).
	w.send(call{method: http.MethodPost, path: "/payments", key: key1, principal: "alice", contentType: "application/json", body: big, chunked: true}).
		problem(t, http.StatusRequestEntityTooLarge, idemhttp.CodeRequestTooLarge)

	w.pay("").problem(t, http.StatusBadRequest, idem.CodeInvalidKey)
	w.pay("too-short").problem(t, http.StatusBadRequest, idem.CodeInvalidKey)
	w.pay(`"unterminated-0123456789`).problem(t, http.StatusBadRequest, idem.CodeInvalidKey)
	w.pay(strings.Repeat("k", 256)).problem(t, http.StatusBadRequest, idem.CodeInvalidKey)
	w.post(key1, "", "", "application/json", payment).problem(t, http.StatusUnauthorized, idemhttp.CodeUnauthenticated)
	w.post(key1, "alice", "", "application/json", `{"a":1,"a":2}`).problem(t, http.StatusBadRequest, idem.CodeInvalidRequest)
	// A key header that is there but empty is said to be empty; a list on
	// one line, and parameters that are not RFC 9651's, are refused.
	for value, says := range map[string]string{
		"":                                 "empty",
		key1 + ", " + key1[:30] + "other0": "list",
		`"` + key1 + `";;;garbage!!`:       "parameter",
	} {
		a := w.send(call{method: http.MethodPost, path: "/payments", principal: "alice", contentType: "application/json", body: payment,
			header: http.Header{idemhttp.KeyHeaderDefault: {value}}})
		if p := a.problem(t, http.StatusBadRequest, idem.CodeInvalidKey); !strings.Contains(p.Detail, says) {
			t.Errorf("key header %q: detail %q, want one that says %q", value, p.Detail, says)
		}
	}
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

func e2eOptionalKeyPassesThrough(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{route: func(r *idemhttp.Route) { r.KeyOptional = true }})
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

func e2eResponseOverLimitReachesClientAndNeverReruns(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{policy: func(p *idem.Policy) { p.ResponseBytesMax = 1 << 10 }})
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

func e2eHandlerVerdicts(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{})
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

func e2eStreamingRouteWithoutMiddleware(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{})
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

// e2eUnprotectedRequestsKeepTheirWriter: a request the middleware does not
// protect (a method it does not cover, no key on a route where the key is
// optional) gets the server's own writer: Flush streams at once and Hijack
// takes the connection, as without the middleware.
func e2eUnprotectedRequestsKeepTheirWriter(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{route: func(rt *idemhttp.Route) { rt.KeyOptional = true }})
	flushed := make(chan error, 1)
	w.behave = func(rw http.ResponseWriter, r *http.Request, n int64) {
		rc := http.NewResponseController(rw)
		if r.Header.Get("X-Test-Hijack") != "" {
			conn, buf, err := rc.Hijack()
			if err != nil {
				t.Errorf("%s %s: hijack: %v", r.Method, r.URL.Path, err)
				return
			}
			defer conn.Close()
			buf.WriteString("HTTP/1.1 299 Hijacked\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
			buf.Flush()
			return
		}
		rw.Header().Set("Content-Type", "text/plain")
		io.WriteString(rw, "first\n")
		flushed <- rc.Flush()
		select { // the client hangs up after the first chunk
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
	unprotected := []call{
		{method: http.MethodGet, path: "/accounts/a", key: key1, principal: "alice"}, // GET is not protected
		{method: http.MethodPost, path: "/payments", principal: "alice"},             // no key, optional
	}
	for _, c := range unprotected {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, c.method, w.url+c.path, nil)
		req.Header.Set("X-Principal", c.principal)
		if c.key != "" {
			req.Header.Set(idemhttp.KeyHeaderDefault, c.key)
		}
		got := make(chan string, 1)
		go func() {
			resp, err := w.client.Do(req)
			if err != nil {
				got <- err.Error()
				return
			}
			defer resp.Body.Close()
			line := make([]byte, 6)
			_, err = io.ReadFull(resp.Body, line)
			got <- fmt.Sprintf("%d %q %v", resp.StatusCode, line, err)
		}()
		select {
		case g := <-got:
			if g != `200 "first\n" <nil>` {
				t.Errorf("%s %s: %s, want the first chunk while the handler runs", c.method, c.path, g)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s %s: nothing reached the client while the handler runs: the flush was held", c.method, c.path)
		}
		if err := <-flushed; err != nil {
			t.Errorf("%s %s: flush: %v", c.method, c.path, err)
		}
		cancel()

		hj := w.send(call{method: c.method, path: c.path, key: c.key, principal: c.principal, header: http.Header{"X-Test-Hijack": {"1"}}})
		if hj.err != nil || hj.status != 299 || string(hj.body) != "hijacked" {
			t.Errorf("%s %s hijacked: %d %q %v, want the handler's own bytes on the connection", c.method, c.path, hj.status, hj.body, hj.err)
		}
	}
	if n := w.executions.Load(); n != 4 {
		t.Errorf("%d executions, want 4 (every request ran, unprotected)", n)
	}
}

// e2ePathPatternsAndMethods: the middleware under ServeMux method and path
// patterns. The handler sees the path values; POST and PATCH are protected
// by default, other methods pass through; one key sent to two paths of a
// pattern, or with two methods, is two requests (422), never a replay of
// the other's response.
func e2ePathPatternsAndMethods(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{})
	to := func(method, path, key string) answer {
		return w.send(call{method: method, path: path, key: key, principal: "alice", contentType: "application/json", body: payment})
	}
	// executedThenReplayed: the first request runs the handler, whose
	// answer says want; the second is its replay, byte for byte.
	executedThenReplayed := func(method, path, key, want string) {
		t.Helper()
		first := to(method, path, key)
		if first.status != http.StatusCreated || !strings.Contains(string(first.body), want) {
			t.Fatalf("%s %s: %d %s, want 201 with %s", method, path, first.status, first.body, want)
		}
		if a := to(method, path, key); a.header.Get(idemhttp.ReplayedHeader) != "true" || !bytes.Equal(a.body, first.body) {
			t.Fatalf("%s %s again: %d %s, want a replay", method, path, a.status, a.body)
		}
	}
	executedThenReplayed(http.MethodPost, "/accounts/a/payments", key1, `"account":"a"`) // the path value reaches the handler
	to(http.MethodPost, "/accounts/b/payments", key1).problem(t, http.StatusUnprocessableEntity, idem.CodeKeyMisuse)
	// A query alone is another request, and the answer does not call it
	// another payload.
	misuse := to(http.MethodPost, "/accounts/a/payments?dry_run=1", key1).problem(t, http.StatusUnprocessableEntity, idem.CodeKeyMisuse)
	if !strings.Contains(misuse.Detail, "(its query differs)") {
		t.Errorf("the same key and body with a query: detail %q, want one that names the query alone", misuse.Detail)
	}
	if other := to(http.MethodPost, "/accounts/b/payments", key1).problem(t, http.StatusUnprocessableEntity, idem.CodeKeyMisuse); !strings.Contains(other.Detail, "(its path differs)") {
		t.Errorf("the same key and body on another path: detail %q, want one that names the path alone", other.Detail)
	}

	const key2 = "1f0e3dad-9990-4cda-b3a4-6ec3d5b7a0c1"
	executedThenReplayed(http.MethodPatch, "/accounts/a", key2, `"method":"PATCH"`) // PATCH is protected by default
	to(http.MethodPost, "/accounts/a", key2).problem(t, http.StatusUnprocessableEntity, idem.CodeKeyMisuse)
	before := w.executions.Load()
	for _, m := range []string{http.MethodPut, http.MethodPut, http.MethodDelete, http.MethodGet} {
		if a := to(m, "/accounts/a", key2); a.status != http.StatusCreated || a.header.Get(idemhttp.ReplayedHeader) != "" {
			t.Fatalf("%s: %d %s, want the handler's own answer (not protected)", m, a.status, a.body)
		}
	}
	if got := w.executions.Load() - before; got != 4 {
		t.Fatalf("%d executions for 4 unprotected requests", got)
	}
	if n := w.executions.Load(); n != 6 {
		t.Fatalf("%d executions, want 6 (POST, PATCH, 4 unprotected)", n)
	}
}

// e2eBodyHandedUnchanged: the handler reads the body the client sent, byte
// for byte (white space, key order, bytes that are not UTF-8), with its
// length, whether the client declared it or sent it chunked; the body is
// read once by the middleware and once by the handler.
func e2eBodyHandedUnchanged(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{route: takeRawTypes})
	type seen struct {
		body   string
		length int64
		again  int
	}
	got := make(chan seen, 1)
	w.behave = func(rw http.ResponseWriter, r *http.Request, n int64) {
		body, _ := io.ReadAll(r.Body)
		rest, _ := io.ReadAll(r.Body)
		got <- seen{string(body), r.ContentLength, len(rest)}
		rw.WriteHeader(http.StatusCreated)
	}
	bodies := []struct{ contentType, body string }{
		{"application/json", "{ \"currency\":\"EUR\",\n\t\"amountCents\" : 1250, \"customerId\":\"c-1\" }"},
		{"application/octet-stream", "\x00\xff\xfe raw \r\n bytes"},
	}
	for i, c := range bodies {
		for j, chunked := range []bool{false, true} {
			key := fmt.Sprintf("%s-%d%d", key1[:30], i, j)
			a := w.send(call{method: http.MethodPost, path: "/payments", key: key, principal: "alice", contentType: c.contentType, body: c.body, chunked: chunked})
			if a.status != http.StatusCreated {
				t.Fatalf("%s chunked=%v: %d %s", c.contentType, chunked, a.status, a.body)
			}
			if s := <-got; s.body != c.body || s.length != int64(len(c.body)) || s.again != 0 {
				t.Fatalf("%s chunked=%v: the handler read %q (length %d, %d more bytes after EOF), want %q", c.contentType, chunked, s.body, s.length, s.again, c.body)
			}
		}
	}
}

// e2eResponseController: under the middleware, on a real connection, a
// held response's Flush sends nothing before the handler returns; Hijack is
// not supported; deadlines and full duplex reach the connection. Past the
// stored-response limit, Flush sends what was written at once.
func e2eResponseController(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{policy: func(p *idem.Policy) { p.ResponseBytesMax = 1 << 10 }})
	release := make(chan struct{})
	var flushErr, hijackErr, readErr, writeErr, duplexErr error
	var hijacker bool
	big := strings.Repeat("b", 2<<10)
	w.behave = func(rw http.ResponseWriter, r *http.Request, n int64) {
		rc := http.NewResponseController(rw)
		rw.Header().Set("Content-Type", "text/plain")
		if r.Header.Get("X-Test-Big") != "" {
			io.WriteString(rw, big) // over the limit: goes through
		} else {
			io.WriteString(rw, "part one;")
		}
		flushErr = rc.Flush()
		_, _, hijackErr = rc.Hijack()
		_, hijacker = rw.(http.Hijacker)
		readErr = rc.SetReadDeadline(time.Now().Add(time.Minute))
		writeErr = rc.SetWriteDeadline(time.Now().Add(time.Minute))
		duplexErr = rc.EnableFullDuplex()
		<-release
		io.WriteString(rw, "part two")
	}
	type reply struct {
		resp *http.Response
		err  error
	}
	start := func(key string, big bool) chan reply {
		replies := make(chan reply, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, w.url+"/payments", strings.NewReader(payment))
			req.Header.Set(idemhttp.KeyHeaderDefault, key)
			req.Header.Set("X-Principal", "alice")
			req.Header.Set("Content-Type", "application/json")
			if big {
				req.Header.Set("X-Test-Big", "1")
			}
			resp, err := w.client.Do(req)
			replies <- reply{resp, err}
		}()
		return replies
	}

	replies := start(key1, false)
	select {
	case r := <-replies:
		t.Fatalf("a held response reached the client before the handler returned: %v %v", r.resp, r.err)
	case <-time.After(200 * time.Millisecond):
	}
	release <- struct{}{}
	r := <-replies
	if r.err != nil {
		t.Fatal(r.err)
	}
	body, _ := io.ReadAll(r.resp.Body)
	r.resp.Body.Close()
	if string(body) != "part one;part two" || flushErr != nil {
		t.Fatalf("held: %q, flush %v", body, flushErr)
	}
	if !errors.Is(hijackErr, http.ErrNotSupported) || hijacker {
		t.Errorf("hijack: %v (a Hijacker: %v), want http.ErrNotSupported", hijackErr, hijacker)
	}
	if readErr != nil || writeErr != nil || duplexErr != nil {
		t.Errorf("deadlines and full duplex over a real connection: %v, %v, %v; want nil", readErr, writeErr, duplexErr)
	}

	other := key1[:30] + "-big00"
	replies = start(other, true)
	var got reply
	select {
	case got = <-replies: // headers arrived while the handler still runs
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("over the limit, Flush did not send the response")
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	head := make([]byte, len(big))
	if _, err := io.ReadFull(got.resp.Body, head); err != nil || string(head) != big {
		t.Fatalf("the flushed part: %v", err)
	}
	release <- struct{}{}
	tail, _ := io.ReadAll(got.resp.Body)
	got.resp.Body.Close()
	if string(tail) != "part two" || flushErr != nil {
		t.Fatalf("over the limit: tail %q, flush %v", tail, flushErr)
	}
	w.pay(other).problem(t, http.StatusConflict, idem.CodeOutcomeUnknown)
}

// e2eMediaTypes: a route takes the media types it declares and answers 415
// to any other, before reading the body: a JSON route does not take a JSON
// body sent as text/plain (which would skip the canonical form and the
// duplicate-member check while the handler parses it as JSON). Parameters
// aside, application/json and +json types are JSON; JSON is UTF-8.
func e2eMediaTypes(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{})
	twice := `{"customerId":"c-1","amountCents":1,"amountCents":99999,"currency":"EUR"}`
	refused := func(contentType, body, says string) {
		t.Helper()
		a := w.post(key1, "alice", "", contentType, body)
		p := a.problem(t, http.StatusUnsupportedMediaType, idemhttp.CodeUnsupportedMediaType)
		if !strings.Contains(p.Detail, says) || a.header.Get("Accept") != "application/json" {
			t.Errorf("Content-Type %q: detail %q, Accept %q; want a detail that says %q and Accept application/json", contentType, p.Detail, a.header.Get("Accept"), says)
		}
	}
	refused("text/plain", twice, "text/plain")
	w.post(key1, "alice", "", "application/json", twice).problem(t, http.StatusBadRequest, idem.CodeInvalidRequest)
	refused("application/jsonx", payment, "application/jsonx")
	refused("application/json; charset=iso-8859-1", payment, "UTF-8")
	refused("application/json; charset", payment, "does not parse")
	refused("application/json charset=utf-8", payment, "does not parse")
	refused("", payment, "no Content-Type")
	if n := w.executions.Load(); n != 0 {
		t.Fatalf("the handler ran %d times for refused media types", n)
	}

	// Parameters, case and quotes aside, it is one request.
	if a := w.post(key1, "alice", "", "application/json; charset=utf-8", payment); a.status != http.StatusCreated {
		t.Fatalf("application/json with charset=utf-8: %d %s", a.status, a.body)
	}
	for _, ct := range []string{"Application/JSON", `application/json ; Charset="UTF-8"`, "application/json;charset=utf-8;v=1"} {
		if a := w.post(key1, "alice", "", ct, payment); a.header.Get(idemhttp.ReplayedHeader) != "true" {
			t.Errorf("Content-Type %q: %d %s, want a replay", ct, a.status, a.body)
		}
	}
	const key2 = "6a1e5d1b-2b0c-4d5e-8f9a-0b1c2d3e4f50"
	if a := w.send(call{method: http.MethodPatch, path: "/accounts/a", key: key2, principal: "alice", contentType: "application/merge-patch+json", body: payment}); a.status != http.StatusCreated {
		t.Errorf("a +json type: %d %s", a.status, a.body)
	}
	if n := w.executions.Load(); n != 2 {
		t.Errorf("%d executions, want 2", n)
	}
	// A route that names its types takes those, JSON or not, and no other.
	csv := newWorld(t, b, worldOptions{route: func(rt *idemhttp.Route) { rt.MediaTypes = []string{"text/csv"} }})
	if a := csv.post(key1, "alice", "", "text/csv; header=present", "a,b\n1,2\n"); a.status != http.StatusCreated {
		t.Errorf("CSV on a CSV route: %d %s", a.status, a.body)
	}
	a := csv.post(key2, "alice", "", "application/json", payment)
	if p := a.problem(t, http.StatusUnsupportedMediaType, idemhttp.CodeUnsupportedMediaType); a.header.Get("Accept") != "text/csv" || !strings.Contains(p.Detail, "text/csv") {
		t.Errorf("JSON on a CSV route: Accept %q, detail %q", a.header.Get("Accept"), p.Detail)
	}
	// A request without a body needs no Content-Type.
	const key3 = "0d4c2b1a-9e8f-4a6b-8c7d-5e4f3a2b1c0d"
	if a := w.send(call{method: http.MethodPost, path: "/payments", key: key3, principal: "alice"}); a.status != http.StatusCreated {
		t.Errorf("no body, no Content-Type: %d %s", a.status, a.body)
	}
}

// endToEnd is the suite over 127.0.0.1 (a real http.Server, a real
// client), each case run over every backend.
var endToEnd = []struct {
	name string
	run  func(*testing.T, backend)
}{
	{"ConcurrentIdenticalRequestsExecuteOnce", e2eConcurrentIdenticalRequestsExecuteOnce},
	{"InFlightAcceptedByPolicy", e2eInFlightAcceptedByPolicy},
	{"AnotherPayloadIs422", e2eAnotherPayloadIs422},
	{"PanicLeavesKeyUnknownAndNeverReruns", e2ePanicLeavesKeyUnknownAndNeverReruns},
	{"StoreDownIs503AndHandlerNeverRuns", e2eStoreDownIs503AndHandlerNeverRuns},
	{"ClientGoneBeforeAnythingRan", e2eClientGoneBeforeAnythingRan},
	{"ReplayIsByteIdentical", e2eReplayIsByteIdentical},
	{"NoCrossScopeReplay", e2eNoCrossScopeReplay},
	{"Refusals", e2eRefusals},
	{"OptionalKeyPassesThrough", e2eOptionalKeyPassesThrough},
	{"ResponseOverLimitReachesClientAndNeverReruns", e2eResponseOverLimitReachesClientAndNeverReruns},
	{"HandlerVerdicts", e2eHandlerVerdicts},
	{"StreamingRouteWithoutMiddleware", e2eStreamingRouteWithoutMiddleware},
	{"PathPatternsAndMethods", e2ePathPatternsAndMethods},
	{"BodyHandedUnchanged", e2eBodyHandedUnchanged},
	{"ResponseController", e2eResponseController},
	{"UnprotectedRequestsKeepTheirWriter", e2eUnprotectedRequestsKeepTheirWriter},
	{"MediaTypes", e2eMediaTypes},
	{"ClientTimeoutDoesNotDecideTheOutcome", e2eClientTimeoutDoesNotDecideTheOutcome},
	{"LeaseLostAfterTheClientLeft", e2eLeaseLostAfterTheClientLeft},
	{"Every503IsLogged", e2eEvery503IsLogged},
	{"ObsTextLocationIsRecorded", e2eObsTextLocationIsRecorded},
}

func TestEndToEnd(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range endToEnd {
				t.Run(c.name, func(t *testing.T) { c.run(t, b) })
			}
		})
	}
}
