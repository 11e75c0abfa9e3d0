package idemhttp_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/fingerprint"
	"github.com/idemkit/idem/idemhttp"
	memstore "github.com/idemkit/idem/store/mem"
)

// routeWorld serves routes with their own configuration over one executor
// (one store), in process: each route counts its handler's runs.
type routeWorld struct {
	t    *testing.T
	mux  *http.ServeMux
	runs map[string]int
}

func newRouteWorld(t *testing.T) (*routeWorld, *idem.Executor) {
	ex, err := idem.New(memstore.New(memstore.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	return &routeWorld{t: t, mux: http.NewServeMux(), runs: map[string]int{}}, ex
}

func (rw *routeWorld) handle(pattern string, ex *idem.Executor, rt idemhttp.Route) {
	rw.t.Helper()
	protect, err := idemhttp.New(ex, rt)
	if err != nil {
		rw.t.Fatal(err)
	}
	rw.mux.Handle(pattern, protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw.runs[pattern]++
		w.WriteHeader(http.StatusCreated)
	})))
}

func (rw *routeWorld) do(method, path, body string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	rw.mux.ServeHTTP(rec, r)
	return rec
}

// send is a request with one key and the body's media type (none if
// empty): a reader other than a strings.Reader is sent without a length.
func (rw *routeWorld) send(method, path, contentType, key string, body io.Reader) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, body)
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	r.Header.Set(idemhttp.KeyHeaderDefault, key)
	rec := httptest.NewRecorder()
	rw.mux.ServeHTTP(rec, r)
	return rec
}

func replayed(rec *httptest.ResponseRecorder) bool {
	return rec.Header().Get(idemhttp.ReplayedHeader) == "true"
}

func codeOf(rec *httptest.ResponseRecorder) string {
	if rec.Header().Get("Content-Type") != "application/problem+json" {
		return ""
	}
	_, after, _ := strings.Cut(rec.Body.String(), `"code":"`)
	code, _, _ := strings.Cut(after, `"`)
	return code
}

// TestRouteConfiguration: each field of a Route does what it says, one
// route beside the other over the same executor.
func TestRouteConfiguration(t *testing.T) {
	rw, ex := newRouteWorld(t)
	who := func(r *http.Request) (string, error) { return "alice", nil }
	include, err := fingerprint.NewSpec("orders.create", 1, fingerprint.Include("/item", "/quantity"))
	if err != nil {
		t.Fatal(err)
	}
	rw.handle("POST /a", ex, idemhttp.Route{UseCase: "a", Principal: who})
	rw.handle("POST /b", ex, idemhttp.Route{UseCase: "b", Principal: who})
	rw.handle("/custom", ex, idemhttp.Route{UseCase: "custom", Principal: who, KeyHeader: "x-request-key", Methods: []string{"put", "DELETE"}})
	rw.handle("POST /orders", ex, idemhttp.Route{UseCase: "orders.create", Principal: who, Fingerprint: include})
	rw.handle("POST /anon", ex, idemhttp.Route{UseCase: "anon", Anonymous: true})
	rw.handle("POST /tenant", ex, idemhttp.Route{UseCase: "tenant", Principal: who,
		Tenant: func(r *http.Request) (string, error) { return "", errors.New("no such tenant") }})

	const k = idemhttp.KeyHeaderDefault
	// The use case is part of the scope: one key on two routes is two records.
	for _, p := range []string{"/a", "/b", "/a", "/b"} {
		rw.do("POST", p, `{}`, k, key1)
	}
	if rw.runs["POST /a"] != 1 || rw.runs["POST /b"] != 1 {
		t.Errorf("runs %v, want one per use case", rw.runs)
	}

	// A custom key header and methods: PUT is protected, POST is not, and
	// the default header is not the key.
	if rec := rw.do("PUT", "/custom", `{}`, k, key1); codeOf(rec) != string(idem.CodeInvalidKey) {
		t.Errorf("PUT with only Idempotency-Key: %d %s, want invalid_key (the key is in X-Request-Key)", rec.Code, rec.Body)
	}
	rw.do("PUT", "/custom", `{}`, "X-Request-Key", key1)
	if rec := rw.do("PUT", "/custom", `{}`, "X-Request-Key", key1); !replayed(rec) {
		t.Errorf("PUT again: %d, want a replay", rec.Code)
	}
	rw.do("POST", "/custom", `{}`)
	rw.do("POST", "/custom", `{}`)
	if got := rw.runs["/custom"]; got != 3 {
		t.Errorf("/custom ran %d times, want 3 (PUT once, POST twice unprotected)", got)
	}

	// Include: only the selected members count.
	rw.do("POST", "/orders", `{"item":"x","quantity":2,"note":"first"}`, k, key1)
	if rec := rw.do("POST", "/orders", `{"item":"x","quantity":2,"note":"second"}`, k, key1); !replayed(rec) {
		t.Errorf("a member outside Include changed: %d %s, want a replay", rec.Code, rec.Body)
	}
	if rec := rw.do("POST", "/orders", `{"item":"x","quantity":3}`, k, key1); rec.Code != http.StatusUnprocessableEntity {
		t.Errorf("an included member changed: %d, want 422", rec.Code)
	}

	// Anonymous: no principal needed, every caller one key space.
	rw.do("POST", "/anon", `{}`, k, key1)
	if rec := rw.do("POST", "/anon", `{}`, k, key1); !replayed(rec) {
		t.Errorf("anonymous route: %d, want a replay", rec.Code)
	}

	// A tenant extractor's error, and a key sent twice, are 400.
	if rec := rw.do("POST", "/tenant", `{}`, k, key1); rec.Code != http.StatusBadRequest || codeOf(rec) != string(idem.CodeInvalidRequest) {
		t.Errorf("tenant error: %d %s", rec.Code, rec.Body)
	}
	if rec := rw.do("POST", "/a", `{}`, k, key1, k, key1); rec.Code != http.StatusBadRequest || codeOf(rec) != string(idem.CodeInvalidKey) {
		t.Errorf("key sent twice: %d %s", rec.Code, rec.Body)
	}
	if rw.runs["POST /tenant"] != 0 {
		t.Errorf("the handler ran for a refused tenant")
	}
}

// TestBodyBytesMaxDefault: without BodyBytesMax the policy's RequestBytesMax
// bounds the body.
func TestBodyBytesMaxDefault(t *testing.T) {
	p := idem.PolicyDefault()
	p.RequestBytesMax = 64
	ex, err := idem.New(memstore.New(memstore.Options{}), idem.WithPolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	rw := &routeWorld{t: t, mux: http.NewServeMux(), runs: map[string]int{}}
	rw.handle("POST /a", ex, idemhttp.Route{UseCase: "a", Anonymous: true})
	if rec := rw.do("POST", "/a", `{"n":"`+strings.Repeat("x", 60)+`"}`, idemhttp.KeyHeaderDefault, key1); rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("over the policy's limit: %d", rec.Code)
	}
	if rec := rw.do("POST", "/a", `{"n":"x"}`, idemhttp.KeyHeaderDefault, key1); rec.Code != http.StatusCreated {
		t.Fatalf("under it: %d", rec.Code)
	}
}

// TestPrincipalNamesNobodyIs401: an extractor that names nobody (an empty
// name without an error, or an error) is answered 401 unauthenticated, and
// the handler does not run: an empty principal must not become one key
// space shared by every unauthenticated caller.
func TestPrincipalNamesNobodyIs401(t *testing.T) {
	rw, ex := newRouteWorld(t)
	rw.handle("POST /empty", ex, idemhttp.Route{UseCase: "empty", Principal: func(*http.Request) (string, error) { return "", nil }})
	rw.handle("POST /failing", ex, idemhttp.Route{UseCase: "failing", Principal: func(*http.Request) (string, error) {
		return "alice", errors.New("token expired")
	}})
	for _, path := range []string{"/empty", "/failing"} {
		for range 2 {
			rec := rw.do("POST", path, `{}`, idemhttp.KeyHeaderDefault, key1)
			if rec.Code != http.StatusUnauthorized || codeOf(rec) != string(idemhttp.CodeUnauthenticated) {
				t.Errorf("%s: %d %s, want 401 unauthenticated", path, rec.Code, rec.Body)
			}
			// RFC 9110 §11.6.1: a 401 carries a challenge.
			if got := rec.Header().Values("WWW-Authenticate"); len(got) != 1 || got[0] != "Bearer" {
				t.Errorf("%s: WWW-Authenticate %q, want the default challenge Bearer", path, got)
			}
		}
	}
	if rw.runs["POST /empty"] != 0 || rw.runs["POST /failing"] != 0 {
		t.Errorf("the handler ran without a caller: %v", rw.runs)
	}
	// A route names its own challenge.
	rw.handle("POST /basic", ex, idemhttp.Route{UseCase: "basic", AuthChallenge: `Basic realm="payments", charset="UTF-8"`,
		Principal: func(*http.Request) (string, error) { return "", nil }})
	if rec := rw.do("POST", "/basic", `{}`, idemhttp.KeyHeaderDefault, key1); rec.Header().Get("WWW-Authenticate") != `Basic realm="payments", charset="UTF-8"` {
		t.Errorf("a route's own challenge: %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}
}
