package idemhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemhttp"
	memstore "github.com/idemkit/idem/store/mem"
)

func protectInProcess(t *testing.T, metrics idem.Metrics, h http.HandlerFunc) http.Handler {
	t.Helper()
	ex, err := idem.New(memstore.New(memstore.Options{}), idem.WithMetrics(metrics))
	if err != nil {
		t.Fatal(err)
	}
	protect, err := idemhttp.New(ex, idemhttp.Route{UseCase: "test", Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	return protect(h)
}

func postTo(h http.Handler, ctx context.Context) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(idemhttp.KeyHeaderDefault, key1)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// TestFlushHijackAndDeadlines: under the middleware, Flush holds the
// response (nothing reaches the client before the handler returns), Hijack
// is not supported, and the connection's deadlines are reachable.
func TestFlushHijackAndDeadlines(t *testing.T) {
	var flushErr, hijackErr, deadlineErr error
	var isFlusher, isHijacker bool
	var seenBeforeReturn bool
	var rec *httptest.ResponseRecorder
	h := protectInProcess(t, idem.MetricsNop{}, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("part one;"))
		rc := http.NewResponseController(w)
		flushErr = rc.Flush()
		_, isFlusher = w.(http.Flusher)
		w.(http.Flusher).Flush()
		seenBeforeReturn = rec.Flushed || rec.Body.Len() > 0
		_, _, hijackErr = rc.Hijack()
		_, isHijacker = w.(http.Hijacker)
		deadlineErr = rc.SetWriteDeadline(time.Now().Add(time.Minute))
		w.Write([]byte("part two"))
	})
	rec = httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(idemhttp.KeyHeaderDefault, key1)
	h.ServeHTTP(rec, r)
	if flushErr != nil || !isFlusher || seenBeforeReturn {
		t.Errorf("flush: err %v, flusher %v, reached the client before the handler returned: %v", flushErr, isFlusher, seenBeforeReturn)
	}
	if !errors.Is(hijackErr, http.ErrNotSupported) || isHijacker {
		t.Errorf("hijack: %v (hijacker %v), want http.ErrNotSupported", hijackErr, isHijacker)
	}
	// The recorder has no deadlines: the call reached it (not the capture),
	// which answers ErrNotSupported. Over a real connection it is nil.
	if !errors.Is(deadlineErr, http.ErrNotSupported) {
		t.Errorf("SetWriteDeadline: %v, want the recorder's own ErrNotSupported", deadlineErr)
	}
	if rec.Body.String() != "part one;part two" || rec.Code != 200 || rec.Header().Get("Content-Type") == "" {
		t.Errorf("response %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
}

// TestClientGoneBeforeAnythingRan: a request whose context is done before
// the executor starts is not a store failure, reserves nothing, and the key
// executes normally afterwards.
func TestClientGoneBeforeAnythingRan(t *testing.T) {
	m := &idem.MetricsMem{}
	runs := 0
	h := protectInProcess(t, m, func(w http.ResponseWriter, r *http.Request) { runs++; w.WriteHeader(201) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := postTo(h, ctx)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), string(idemhttp.CodeRequestCancelled)) {
		t.Fatalf("cancelled: %d %s", rec.Code, rec.Body.String())
	}
	for _, c := range idem.Counters() {
		if n := m.Total(c); n != 0 {
			t.Errorf("%s = %d, want nothing counted", c, n)
		}
	}
	if rec := postTo(h, context.Background()); rec.Code != 201 || runs != 1 {
		t.Fatalf("afterwards: %d, %d runs", rec.Code, runs)
	}
}

func TestNewRefusesBadRoutes(t *testing.T) {
	ex, err := idem.New(memstore.New(memstore.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	who := func(*http.Request) (string, error) { return "u", nil }
	for name, c := range map[string]struct {
		ex   *idem.Executor
		rt   idemhttp.Route
		want string
	}{
		"no principal":          {ex, idemhttp.Route{UseCase: "u"}, "no Principal extractor"},
		"principal + anonymous": {ex, idemhttp.Route{UseCase: "u", Principal: who, Anonymous: true}, "choose one"},
		"no use case":           {ex, idemhttp.Route{Principal: who}, "UseCase"},
		"nil executor":          {nil, idemhttp.Route{UseCase: "u", Principal: who}, "nil executor"},
		"bad key header":        {ex, idemhttp.Route{UseCase: "u", Principal: who, KeyHeader: "Idem Key"}, "field name"},
		"empty methods":         {ex, idemhttp.Route{UseCase: "u", Principal: who, Methods: []string{}}, "protects nothing"},
		"bad method":            {ex, idemhttp.Route{UseCase: "u", Principal: who, Methods: []string{"PO ST"}}, "token"},
		"negative limit":        {ex, idemhttp.Route{UseCase: "u", Principal: who, BodyBytesMax: -1}, "negative"},
		"replays Content-Length": {ex, idemhttp.Route{UseCase: "u", Principal: who, ReplayHeaders: []string{"content-length"}},
			"never replayed"},
		"replays the marker": {ex, idemhttp.Route{UseCase: "u", Principal: who, ReplayHeaders: []string{idemhttp.ReplayedHeader}},
			"never replayed"},
		"control byte in use case": {ex, idemhttp.Route{UseCase: "u\x00", Principal: who}, "control"},
		"challenge with a newline": {ex, idemhttp.Route{UseCase: "u", Principal: who, AuthChallenge: "Basic\r\nX: 1"}, "challenge"},
		"challenge without scheme": {ex, idemhttp.Route{UseCase: "u", Principal: who, AuthChallenge: ` realm="x"`}, "challenge"},
		"empty media types":        {ex, idemhttp.Route{UseCase: "u", Principal: who, MediaTypes: []string{}}, "takes nothing"},
		"media type with a parameter": {ex, idemhttp.Route{UseCase: "u", Principal: who, MediaTypes: []string{"application/json; charset=utf-8"}},
			"without parameters"},
		"media type */json":     {ex, idemhttp.Route{UseCase: "u", Principal: who, MediaTypes: []string{"*/json"}}, "needs a subtype"},
		"challenge, two spaces": {ex, idemhttp.Route{UseCase: "u", Principal: who, AuthChallenge: `Basic  realm="x"`}, "challenge"},
	} {
		if _, err := idemhttp.New(c.ex, c.rt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one that says %q", name, err, c.want)
		}
	}
}

// TestUnprotectedMethodPassesThrough: a GET under the middleware is the
// handler's alone, however often.
func TestUnprotectedMethodPassesThrough(t *testing.T) {
	runs := 0
	h := protectInProcess(t, idem.MetricsNop{}, func(w http.ResponseWriter, r *http.Request) { runs++ })
	for range 2 {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set(idemhttp.KeyHeaderDefault, key1)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if runs != 2 {
		t.Fatalf("%d runs, want 2", runs)
	}
}

// TestHandlerMayKeepItsRequest: what the middleware recycles between
// requests (the attempt, the body's buffer) is never what a handler that
// ran can still hold: a request kept past the handler's return still reads
// its own body and names its own attempt while other requests (replays,
// refusals, new keys) come and go.
func TestHandlerMayKeepItsRequest(t *testing.T) {
	var kept *http.Request
	h := protectInProcess(t, idem.MetricsNop{}, func(w http.ResponseWriter, r *http.Request) {
		if kept == nil {
			kept = r // read later, as a goroutine the handler started might
		}
		w.WriteHeader(http.StatusCreated)
	})
	post := func(key, body string) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(idemhttp.KeyHeaderDefault, key)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	const first = `{"first":"body, the one the kept request must still read"}`
	post(key1, first)
	for i := range 50 {
		post(key1, first)                                    // replays
		post(key1, `{"other":"payload`+strconv.Itoa(i)+`"}`) // 422
		post(key1[:30]+strconv.Itoa(100000+i), `{"new":"key, another run, another body xxxxxxxx"}`)
	}
	at, ok := idemhttp.AttemptOf(kept)
	if !ok || at.Scope.Key != key1 {
		t.Fatalf("the kept request's attempt: %+v %v, want key %s", at, ok, key1)
	}
	if b, err := io.ReadAll(kept.Body); err != nil || string(b) != first {
		t.Fatalf("the kept request's body: %q %v, want %q", b, err, first)
	}
}
