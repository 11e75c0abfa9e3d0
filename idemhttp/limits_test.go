package idemhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/idemhttp"
)

// Every limit of a protected request, at exactly the limit and one past
// it: a limit off by one either way fails here.

// TestKeyLengthAtItsLimits: keys of 16 and 255 bytes are taken, bare or as
// a quoted string (the quotes are not the key's), and keys of 15 and 256
// bytes are refused 400 invalid_key, either way.
func TestKeyLengthAtItsLimits(t *testing.T) {
	rw, ex := newRouteWorld(t)
	rw.handle("POST /a", ex, idemhttp.Route{UseCase: "a", Anonymous: true})
	for _, n := range []int{core.KeyBytesMin - 1, core.KeyBytesMin, core.KeyBytesMax, core.KeyBytesMax + 1} {
		taken := n >= core.KeyBytesMin && n <= core.KeyBytesMax
		for _, quoted := range []bool{false, true} {
			value := strings.Repeat("k", n) // a key of its own per length and form
			if quoted {
				value = `"` + strings.Repeat("q", n) + `"`
			}
			rec := rw.do("POST", "/a", `{}`, idemhttp.KeyHeaderDefault, value)
			switch {
			case taken && (rec.Code != http.StatusCreated || replayed(rec)):
				t.Errorf("a %d-byte key (quoted %v): %d %s, want it executed", n, quoted, rec.Code, rec.Body)
			case !taken && (rec.Code != http.StatusBadRequest || codeOf(rec) != string(idem.CodeInvalidKey)):
				t.Errorf("a %d-byte key (quoted %v): %d %s, want 400 invalid_key", n, quoted, rec.Code, rec.Body)
			}
		}
	}
	if got, want := rw.runs["POST /a"], 4; got != want {
		t.Errorf("%d runs, want %d (16 and 255 bytes, bare and quoted)", got, want)
	}
}

// jsonOfLength is a JSON object of exactly n bytes (n >= 8).
func jsonOfLength(n int) string { return `{"n":"` + strings.Repeat("x", n-8) + `"}` }

// TestBodyAtItsMax: a body of exactly the route's maximum is taken and one
// byte more is refused 413 before the handler runs, whether the client
// declares its length or sends it chunked (read up to the limit).
func TestBodyAtItsMax(t *testing.T) {
	const limit = 64
	rw, ex := newRouteWorld(t)
	rw.handle("POST /a", ex, idemhttp.Route{UseCase: "a", Anonymous: true, BodyBytesMax: limit})
	for _, n := range []int{limit, limit + 1} {
		for _, chunked := range []bool{false, true} {
			var body io.Reader = strings.NewReader(jsonOfLength(n))
			if chunked {
				body = io.MultiReader(body) // no length to declare
			}
			rec := rw.send("POST", "/a", "application/json", fmt.Sprintf("%s-%d-%v", key1[:20], n, chunked), body)
			want := http.StatusCreated
			if n > limit {
				want = http.StatusRequestEntityTooLarge
			}
			if rec.Code != want {
				t.Errorf("a %d-byte body (limit %d, chunked %v): %d %s, want %d", n, limit, chunked, rec.Code, rec.Body, want)
			}
		}
	}
	if got := rw.runs["POST /a"]; got != 2 {
		t.Errorf("%d runs, want 2 (the bodies at the limit)", got)
	}
}

// TestEveryBodyNeedsAContentType: a body of one byte without a
// Content-Type is refused 415 (the route cannot tell how to fingerprint
// it), while a request without a body needs none.
func TestEveryBodyNeedsAContentType(t *testing.T) {
	rw, ex := newRouteWorld(t)
	rw.handle("POST /a", ex, idemhttp.Route{UseCase: "a", Anonymous: true})
	for _, body := range []string{"1", ""} {
		rec := rw.send("POST", "/a", "", fmt.Sprintf("%s-%d", key1[:30], len(body)), strings.NewReader(body))
		want, code := http.StatusUnsupportedMediaType, string(idemhttp.CodeUnsupportedMediaType)
		if body == "" {
			want, code = http.StatusCreated, ""
		}
		if rec.Code != want || codeOf(rec) != code {
			t.Errorf("a %d-byte body without a Content-Type: %d %s, want %d %s", len(body), rec.Code, rec.Body, want, code)
		}
	}
	if got := rw.runs["POST /a"]; got != 1 {
		t.Errorf("%d runs, want 1 (the request without a body)", got)
	}
}
