package idemhttp_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/fingerprint"
	"github.com/idemkit/idem/idemhttp"
	memstore "github.com/idemkit/idem/store/mem"
)

// The HTTP conformance corpus: what this middleware answers to a list of
// request sequences, as data, so that a middleware in another language
// (wasm/js/http, by wasm/js/http/conformance.test.mjs) is held to the same
// answers, byte for byte. conformanceCases lists them; the scripted
// handler (conformanceHandler) is the same on both sides.

var updateFixture = flag.Bool("update-fixture", false, "rewrite testdata/conformance.json from the Go middleware")

const conformancePath = "testdata/conformance.json"

type confRoute struct {
	KeyOptional   bool     `json:"keyOptional,omitempty"`
	Methods       []string `json:"methods,omitempty"`
	MediaTypes    []string `json:"mediaTypes,omitempty"`
	BodyBytesMax  int64    `json:"bodyBytesMax,omitempty"`
	ReplayHeaders []string `json:"replayHeaders,omitempty"`
	Exclude       []string `json:"exclude,omitempty"`
	Anonymous     bool     `json:"anonymous,omitempty"` // else the principal is X-Principal
	Tenant        bool     `json:"tenant,omitempty"`    // the tenant is X-Tenant
	// ResponseBytesMax is the executor policy's (0: the default).
	ResponseBytesMax int `json:"responseBytesMax,omitempty"`
}

type confRequest struct {
	Method  string      `json:"method"`
	Target  string      `json:"target"`
	Headers [][2]string `json:"headers"` // in order; a name twice is two lines; values latin1 (a byte a character)
	Body    string      `json:"body"`    // as sent (latin1)
	// Handler is what the scripted handler does if it runs: created (201
	// with a body that counts its runs), empty (writes nothing), nocontent
	// (204), notExecuted, unknown, big (a 300-byte body).
	Handler string `json:"handler"`
}

type confAnswer struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"` // those of conformanceHeaders that were sent, values joined by ", "
	Body    string            `json:"body"`
}

type confCase struct {
	Name     string        `json:"name"`
	Route    confRoute     `json:"route"`
	Requests []confRequest `json:"requests"`
	Answers  []confAnswer  `json:"answers"`
}

// conformanceHeaders are the response headers compared: those the
// middleware decides, and those the handler writes.
var conformanceHeaders = []string{"Content-Type", "Location", "Retry-After", idemhttp.ReplayedHeader, "Accept",
	"WWW-Authenticate", "Cache-Control", "Content-Length", "X-Extra", "X-Runs"}

// conformanceHandler is the scripted handler: runs counts its runs in the case.
func conformanceHandler(runs *int, script string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*runs++
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Runs", fmt.Sprint(*runs))
		switch script {
		case "empty":
			return
		case "nocontent":
			w.WriteHeader(http.StatusNoContent)
			return
		case "notExecuted":
			_ = idemhttp.NotExecuted(r, nil)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`{"error":"nothing was done"}`))
			return
		case "unknown":
			_ = idemhttp.OutcomeUnknown(r, nil)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusGatewayTimeout)
			_, _ = w.Write([]byte(`{"error":"may have happened"}`))
			return
		case "big":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write(bytes.Repeat([]byte("x"), 300))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", fmt.Sprintf("/things/%d", *runs))
		w.Header().Set("X-Extra", "extra")
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"run":%d,"bodyBytes":%d}`, *runs, len(body))
	})
}

// runConformanceCase runs one case through the Go middleware and fills its answers.
func runConformanceCase(t *testing.T, c *confCase) {
	t.Helper()
	p := idem.PolicyDefault()
	if c.Route.ResponseBytesMax > 0 {
		p.ResponseBytesMax = c.Route.ResponseBytesMax
	}
	ex, err := idem.New(memstore.New(memstore.Options{}), idem.WithPolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	rt := idemhttp.Route{UseCase: "conformance.create", KeyOptional: c.Route.KeyOptional, Methods: c.Route.Methods,
		MediaTypes: c.Route.MediaTypes, BodyBytesMax: c.Route.BodyBytesMax, ReplayHeaders: c.Route.ReplayHeaders, Anonymous: c.Route.Anonymous}
	if len(c.Route.Exclude) > 0 {
		if rt.Fingerprint, err = fingerprint.NewSpec(rt.UseCase, 1, fingerprint.Exclude(c.Route.Exclude...)); err != nil {
			t.Fatal(err)
		}
	}
	if !c.Route.Anonymous {
		rt.Principal = func(r *http.Request) (string, error) { return r.Header.Get("X-Principal"), nil }
	}
	if c.Route.Tenant {
		rt.Tenant = func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil }
	}
	protect, err := idemhttp.New(ex, rt)
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	c.Answers = nil
	for _, rq := range c.Requests {
		r := httptest.NewRequest(rq.Method, rq.Target, strings.NewReader(rq.Body))
		for _, h := range rq.Headers {
			r.Header.Add(h[0], h[1])
		}
		if rq.Body == "" {
			r.ContentLength, r.Body = 0, http.NoBody
		}
		w := httptest.NewRecorder()
		protect(conformanceHandler(&runs, rq.Handler)).ServeHTTP(w, r)
		a := confAnswer{Status: w.Code, Headers: map[string]string{}, Body: w.Body.String()}
		for _, name := range conformanceHeaders {
			if vs := w.Result().Header.Values(name); len(vs) > 0 {
				a.Headers[name] = strings.Join(vs, ", ")
			}
		}
		c.Answers = append(c.Answers, a)
	}
}

// TestConformanceFixtureFresh runs the corpus through this middleware and
// fails unless testdata/conformance.json holds exactly its answers (rerun
// with -update-fixture after a change of the middleware's answers).
func TestConformanceFixtureFresh(t *testing.T) {
	cases := conformanceCases()
	seen := map[string]bool{}
	for i := range cases {
		if seen[cases[i].Name] {
			t.Fatalf("two cases are named %q", cases[i].Name)
		}
		seen[cases[i].Name] = true
		runConformanceCase(t, &cases[i])
	}
	got, err := json.MarshalIndent(struct {
		Comment string     `json:"comment"`
		Headers []string   `json:"headers"`
		Cases   []confCase `json:"cases"`
	}{"generated by go test ./idemhttp/ -run TestConformanceFixtureFresh -update-fixture: what the Go middleware answers; " +
		"wasm/js/http/conformance.test.mjs holds the Node middleware to it. Strings are latin1: a character a byte",
		conformanceHeaders, latin1Cases(cases)}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *updateFixture {
		if err := os.WriteFile(conformancePath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want, err := os.ReadFile(conformancePath); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is stale (%v): run go test ./idemhttp/ -run TestConformanceFixtureFresh -update-fixture", conformancePath, err)
	}
}

// latin1Cases is cases with every byte string spelled a character a byte
// (JSON strings are Unicode, and some of these bytes are not UTF-8).
func latin1Cases(cases []confCase) []confCase {
	out := make([]confCase, len(cases))
	for i, c := range cases {
		c.Requests = append([]confRequest(nil), c.Requests...)
		for j := range c.Requests {
			rq := &c.Requests[j]
			hs := make([][2]string, len(rq.Headers))
			for k, h := range rq.Headers {
				hs[k] = [2]string{h[0], latin1(h[1])}
			}
			rq.Headers, rq.Body = hs, latin1(rq.Body)
		}
		c.Answers = append([]confAnswer(nil), c.Answers...)
		for j := range c.Answers {
			a := &c.Answers[j]
			hs := map[string]string{}
			for k, v := range a.Headers {
				hs[k] = latin1(v)
			}
			a.Headers, a.Body = hs, latin1(a.Body)
		}
		out[i] = c
	}
	return out
}

func latin1(s string) string {
	r := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		r[i] = rune(s[i])
	}
	return string(r)
}
