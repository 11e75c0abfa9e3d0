package idemhttp

import (
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem"
)

func TestKeyOf(t *testing.T) {
	const k = "0123456789abcdef-key"
	cases := []struct {
		name    string
		values  []string
		want    string
		present bool
		errPart string
	}{
		{"absent", nil, "", false, ""},
		{"bare", []string{k}, k, true, ""},
		{"structured string", []string{`"` + k + `"`}, k, true, ""},
		{"escapes", []string{`"a\"b\\c0123456789abcdef"`}, `a"b\c0123456789abcdef`, true, ""},
		{"parameters", []string{`"` + k + `";v=1`}, k, true, ""},
		{"empty", []string{""}, "", true, "missing"},
		{"twice", []string{k, k}, "", true, "more than once"},
		{"unterminated", []string{`"` + k}, "", true, "no closing quote"},
		{"bad escape", []string{`"a\x0123456789abcdef"`}, "", true, "invalid escape"},
		{"trailing junk", []string{`"` + k + `"x`}, "", true, "followed by"},
		{"control byte inside quotes", []string{"\"abc\x01def0123456789\""}, "", true, "0x01"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range c.values {
				h.Add(DefaultKeyHeader, v)
			}
			got, present, err := keyOf(h, DefaultKeyHeader)
			if present != c.present {
				t.Fatalf("present %v, want %v", present, c.present)
			}
			if c.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), c.errPart) {
					t.Fatalf("err %v, want one that says %q", err, c.errPart)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		0: 1, -time.Second: 1, time.Millisecond: 1, time.Second: 1,
		time.Second + time.Nanosecond: 2, 1500 * time.Millisecond: 2, 2 * time.Second: 2, time.Minute: 60,
	} {
		if got := RetryAfterSeconds(d); got != want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}

// undocumented lists the codes that have no section in the problems page.
func undocumented(page string, codes []idem.Code) []idem.Code {
	var missing []idem.Code
	for _, c := range codes {
		if !regexp.MustCompile(`(?m)^## ` + regexp.QuoteMeta(string(c)) + `$`).MatchString(page) {
			missing = append(missing, c)
		}
	}
	return missing
}

// TestProblemTypesAreDocumented: every problem type URI points at a section
// of problems.md, and the check catches a section removed.
func TestProblemTypesAreDocumented(t *testing.T) {
	page, err := os.ReadFile("problems.md")
	if err != nil {
		t.Fatal(err)
	}
	if m := undocumented(string(page), ProblemCodes()); len(m) > 0 {
		t.Fatalf("problems.md has no section for %v", m)
	}
	planted := strings.Replace(string(page), "## key_misuse\n", "", 1)
	if m := undocumented(planted, ProblemCodes()); len(m) != 1 || m[0] != idem.CodeKeyMisuse {
		t.Fatalf("a page without key_misuse: the check found %v missing", m)
	}
	for _, c := range ProblemCodes() {
		if _, ok := problemTitles[c]; !ok {
			t.Errorf("code %s has no title", c)
		}
	}
}

// TestReplayNeverInjects: whatever a record holds, a replay sends only the
// route's replayed names and values without control bytes.
func TestReplayNeverInjects(t *testing.T) {
	c := &config{replayed: []string{"Content-Type", "Location"}}
	resp := idem.Response{StatusCode: 201, Body: []byte("{}"), Headers: []idem.Header{
		{Name: "content-type", Value: "application/json"},
		{Name: "Set-Cookie", Value: "session=stolen"},
		{Name: "Location", Value: "/a\r\nX-Injected: 1"},
		{Name: "Location", Value: "/payments/1"},
		{Name: "Idempotent-Replayed", Value: "false"},
	}}
	rec := httptest.NewRecorder()
	rec.Header().Set("Location", "/from-an-outer-middleware")
	writeReplay(rec, c, &resp)
	h := rec.Result().Header
	if got := h.Values("Location"); len(got) != 1 || got[0] != "/payments/1" {
		t.Errorf("Location %q, want only the clean stored one", got)
	}
	if h.Get("Set-Cookie") != "" || h.Get("X-Injected") != "" {
		t.Errorf("headers the route does not replay were sent: %v", h)
	}
	if got := h.Values(ReplayedHeader); len(got) != 1 || got[0] != "true" {
		t.Errorf("%s = %q, want true once", ReplayedHeader, got)
	}
	if h.Get("Content-Type") != "application/json" || rec.Body.String() != "{}" || rec.Code != 201 {
		t.Errorf("replay %d %q %q", rec.Code, h.Get("Content-Type"), rec.Body.String())
	}
}

func TestRawFingerprint(t *testing.T) {
	a := rawFingerprint("u", mediaTypeOf("Text/Plain; charset=UTF-8"), []byte("x"))
	if b := rawFingerprint("u", mediaTypeOf("text/plain;charset=UTF-8"), []byte("x")); a != b {
		t.Error("one media type in two spellings gave two fingerprints")
	}
	// Moving bytes across a boundary never gives the same pre-image.
	if rawFingerprint("u", "text/plain", []byte("x")) == rawFingerprint("u", "text/plai", []byte("nx")) {
		t.Error("media type and body are not separated")
	}
	if rawFingerprint("u", "text/plain", []byte("x")) == rawFingerprint("v", "text/plain", []byte("x")) {
		t.Error("the use case does not count")
	}
	// The request's fingerprint binds the body's to the method and target,
	// each a field of its own.
	body := rawFingerprint("u", "text/plain", []byte("x"))
	base := requestFingerprint(body, "POST", "/accounts/a")
	for name, other := range map[string]idem.Fingerprint{
		"another target":        requestFingerprint(body, "POST", "/accounts/b"),
		"another method":        requestFingerprint(body, "PATCH", "/accounts/a"),
		"a query":               requestFingerprint(body, "POST", "/accounts/a?x=1"),
		"bytes moved across":    requestFingerprint(body, "POST/", "accounts/a"),
		"another body":          requestFingerprint(rawFingerprint("u", "text/plain", []byte("y")), "POST", "/accounts/a"),
		"the body's own digest": body,
	} {
		if other == base {
			t.Errorf("%s: same request fingerprint", name)
		}
	}
	if requestFingerprint(body, "POST", "/accounts/a") != base {
		t.Error("the request fingerprint is not deterministic")
	}
	for ct, want := range map[string]bool{
		"application/json": true, "Application/JSON; charset=utf-8": true, "application/problem+json": true,
		"text/plain": false, "": false, "application/jsonx": false, "+json": false,
	} {
		if isJSON(ct) != want {
			t.Errorf("isJSON(%q) = %v", ct, !want)
		}
	}
}
