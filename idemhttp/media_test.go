package idemhttp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemkit/idem/idemhttp"
)

// TestSuffixTypesAreJSON: a +json type is JSON whatever its case (media
// types are case-insensitive, RFC 9110 §8.3.1): fingerprinted as JSON, so
// that the same members in another order are the same request, and held
// to UTF-8 as application/json is.
func TestSuffixTypesAreJSON(t *testing.T) {
	rw, ex := newRouteWorld(t)
	rw.handle("PATCH /a", ex, idemhttp.Route{UseCase: "a", Anonymous: true})
	patch := func(contentType, body, key string) *httptest.ResponseRecorder {
		return rw.send("PATCH", "/a", contentType, key, strings.NewReader(body))
	}
	if rec := patch("application/merge-patch+JSON", `{"a":1,"b":2}`, key1); rec.Code != http.StatusCreated || replayed(rec) {
		t.Fatalf("+JSON: %d %s, want 201", rec.Code, rec.Body)
	}
	if rec := patch("Application/Merge-Patch+Json", `{ "b":2, "a":1 }`, key1); !replayed(rec) {
		t.Errorf("the same members in another order, as +Json: %d %s, want the replay (the body fingerprinted as JSON)", rec.Code, rec.Body)
	}
	for i, ct := range []string{"application/merge-patch+json; charset=latin1", "application/problem+JSON; charset=utf-16"} {
		rec := patch(ct, `{"a":1}`, key1[:30]+"other"+string(rune('0'+i)))
		if rec.Code != http.StatusUnsupportedMediaType || codeOf(rec) != string(idemhttp.CodeUnsupportedMediaType) {
			t.Errorf("%s: %d %s, want 415 (JSON is UTF-8)", ct, rec.Code, rec.Body)
		}
	}
	if rec := patch("application/merge-patch+json; charset=UTF-8", `{"a":1}`, key1[:30]+"other9"); rec.Code != http.StatusCreated {
		t.Errorf("+json; charset=UTF-8: %d %s, want 201", rec.Code, rec.Body)
	}
	if n := rw.runs["PATCH /a"]; n != 2 {
		t.Errorf("%d runs, want 2", n)
	}
}
