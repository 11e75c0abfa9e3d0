package idemhttp

import (
	"crypto/sha256"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/fingerprint"
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
		{"empty", []string{""}, "", true, "empty"},
		{"twice", []string{k, k}, "", true, "more than once"},
		{"unterminated", []string{`"` + k}, "", true, "no closing quote"},
		{"bad escape", []string{`"a\x0123456789abcdef"`}, "", true, "invalid escape"},
		{"trailing junk", []string{`"` + k + `"x`}, "", true, "followed by"},
		{"control byte inside quotes", []string{"\"abc\x01def0123456789\""}, "", true, "0x01"},
		// One line holding a list is two keys, as two lines are (RFC 9110
		// lets an intermediary join them with commas): refused, bare or quoted.
		{"bare list", []string{k + ", " + k + "2"}, "", true, "list"},
		{"bare list without spaces", []string{k + "," + k}, "", true, "list"},
		{"quoted list", []string{`"` + k + `", "` + k + `"`}, "", true, "list"},
		{"quoted list after parameters", []string{`"` + k + `";a=1, "` + k + `"`}, "", true, "list"},
		// Parameters are RFC 9651 parameters, or the value is refused.
		{"every kind of parameter", []string{`"` + k + `";a;b=1;c=-1.5;d="x\"y";e=tok/en:1;f=:aGk=:;g=?0;h=@1700000000;i=%"caf%c3%a9";*j.k-l_m=?1`}, k, true, ""},
		{"spaces after the item", []string{`"` + k + `";a=1  `}, k, true, ""},
		{"spaces after the string", []string{`"` + k + `"  `}, k, true, ""},
		{"space after a semicolon", []string{`"` + k + `"; a=1;  b`}, k, true, ""},
		{"garbage parameters", []string{`"` + k + `";;;garbage!!`}, "", true, "parameter"},
		{"empty parameter", []string{`"` + k + `";`}, "", true, "parameter"},
		{"upper-case parameter key", []string{`"` + k + `";A=1`}, "", true, "parameter"},
		{"parameter key starting with a digit", []string{`"` + k + `";1a=1`}, "", true, "parameter"},
		{"no value after =", []string{`"` + k + `";a=`}, "", true, "no value"},
		{"space before a semicolon", []string{`"` + k + `" ;a=1`}, "", true, "followed by"},
		{"value not a bare item", []string{`"` + k + `";a=!x`}, "", true, "not a structured field value"},
		{"integers of 15 digits", []string{`"` + k + `";a=123456789012345;b=-999999999999999`}, k, true, ""},
		{"integer of 16 digits", []string{`"` + k + `";a=1234567890123456`}, "", true, "integer"},
		{"decimals of 12 and 3 digits", []string{`"` + k + `";a=123456789012.123;b=-999999999999.999`}, k, true, ""},
		{"decimal of 4 fraction digits", []string{`"` + k + `";a=1.2345`}, "", true, "decimal"},
		{"decimal ending with a dot", []string{`"` + k + `";a=1.`}, "", true, "decimal"},
		{"decimal of 13 integer digits", []string{`"` + k + `";a=1234567890123.5`}, "", true, "decimal"},
		{"a lone minus", []string{`"` + k + `";a=-`}, "", true, "integer"},
		{"bad boolean", []string{`"` + k + `";a=?2`}, "", true, "boolean"},
		{"bad byte sequence", []string{`"` + k + `";a=:@@:`}, "", true, "byte sequence"},
		{"unterminated byte sequence", []string{`"` + k + `";a=:aGk=`}, "", true, "byte sequence"},
		{"undecodable byte sequence", []string{`"` + k + `";a=:a:`}, "", true, "byte sequence"},
		{"date with a fraction", []string{`"` + k + `";a=@1.5`}, "", true, "date"},
		{"display string with upper-case hex", []string{`"` + k + `";a=%"%C3%A9"`}, "", true, "display string"},
		{"display string not UTF-8", []string{`"` + k + `";a=%"%ff"`}, "", true, "display string"},
		{"unterminated parameter string", []string{`"` + k + `";a="x`}, "", true, "no closing quote"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range c.values {
				h.Add(KeyHeaderDefault, v)
			}
			got, present, err := keyOf(h, KeyHeaderDefault)
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
}

// TestParseContentType: RFC 9110 media types with their parameters, JSON
// told apart from the rest, the charset unquoted; what does not parse is
// an error, never a guess.
func TestParseContentType(t *testing.T) {
	for v, want := range map[string]struct {
		json    bool
		charset string
	}{
		"application/json": {true, ""}, "Application/JSON; charset=utf-8": {true, "utf-8"}, "application/problem+json": {true, ""},
		`application/json ;	Charset="UTF-8" ; v=1`: {true, "UTF-8"}, `application/json;;a=1;`: {true, ""},
		`application/json; charset="utf\-8"`: {true, "utf-8"}, "text/plain;charset=latin1": {false, "latin1"},
		"application/jsonx": {false, ""}, "text/json": {false, ""}, "application/x+json": {true, ""},
	} {
		ct, err := parseContentType(v)
		if err != nil || ct.isJSON() != want.json || ct.charset != want.charset {
			t.Errorf("%q: %+v %v, want JSON %v, charset %q", v, ct, err, want.json, want.charset)
		}
	}
	for _, v := range []string{
		"json", "/json", "application/", "application/json charset=utf-8", "application/json; charset",
		"application/json; =x", `application/json; charset="utf-8`, "application/json; a=\x01", "app lication/json",
		"application/json; charset=utf-8; charset=latin1", "application/json; a=\"\x00\"",
	} {
		if ct, err := parseContentType(v); err == nil {
			t.Errorf("%q: parsed as %+v", v, ct)
		}
	}
}

// TestMediaRanges: a route's media types as Route.MediaTypes takes them.
func TestMediaRanges(t *testing.T) {
	for pattern, cases := range map[string]map[string]bool{
		"application/json": {"application/json": true, "APPLICATION/Json": true, "application/jsonx": false, "text/json": false},
		"*/*+json":         {"application/problem+json": true, "text/x+JSON": true, "application/json": false, "application/+json": false},
		"text/*":           {"text/csv": true, "text/plain": true, "application/csv": false},
		"*/*":              {"text/csv": true, "application/octet-stream": true},
		"Text/CSV":         {"text/csv": true, "text/csvx": false},
	} {
		m, err := parseMediaRange(pattern)
		if err != nil {
			t.Fatalf("%q: %v", pattern, err)
		}
		for v, want := range cases {
			typ, sub, _ := strings.Cut(v, "/")
			if m.matches(typ, sub) != want {
				t.Errorf("%q matches %q: %v, want %v", pattern, v, !want, want)
			}
		}
	}
	for _, bad := range []string{"json", "application/json; charset=utf-8", "*/json", "a b/c", "text/", "*/*+", "/json"} {
		if _, err := parseMediaRange(bad); err == nil {
			t.Errorf("%q: accepted as a media type", bad)
		}
	}
}

// TestReplayRefusesWhatHTTPCannotSend: a record whose status HTTP cannot
// send as a final answer (one the core would refuse to store, from another
// writer of the store) is answered 500 response_invalid, never passed to
// WriteHeader (which panics on some and sends others as a 1xx hint before
// an implicit 200).
func TestReplayRefusesWhatHTTPCannotSend(t *testing.T) {
	c := &config{replayed: []string{"Content-Type", "Location"}}
	for _, resp := range []idem.Response{
		{StatusCode: 0}, {StatusCode: 99, Body: []byte("x")}, {StatusCode: 103, Body: []byte("x")},
		{StatusCode: 199}, {StatusCode: 600}, {StatusCode: 1000},
		{StatusCode: 204, Body: []byte("x")}, {StatusCode: 304, Body: []byte("x")},
	} {
		rec := httptest.NewRecorder()
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Fatalf("status %d: replay panicked: %v", resp.StatusCode, v)
				}
			}()
			writeReplay(rec, c, &resp)
		}()
		if rec.Code != http.StatusInternalServerError || rec.Header().Get("Content-Type") != "application/problem+json" ||
			!strings.Contains(rec.Body.String(), `"code":"`+string(idem.CodeResponseInvalid)+`"`) || rec.Header().Get(ReplayedHeader) != "" {
			t.Errorf("stored status %d, %d-byte body: replayed as %d %q %s", resp.StatusCode, len(resp.Body), rec.Code, rec.Header(), rec.Body)
		}
	}
	for _, s := range []int{200, 204, 304, 599} {
		rec := httptest.NewRecorder()
		writeReplay(rec, c, &idem.Response{StatusCode: s})
		if rec.Code != s || rec.Header().Get(ReplayedHeader) != "true" {
			t.Errorf("stored status %d: replayed as %d", s, rec.Code)
		}
	}
}

// TestProblemOfAnErrorWithoutStatus: an *idem.Error with no status (built
// by hand, not one of the executor's) is answered 500, not a panic.
func TestProblemOfAnErrorWithoutStatus(t *testing.T) {
	for _, status := range []int{0, 99, 600} {
		p := problemOf(&idem.Error{Code: idem.CodeStoreUnavailable, Status: status})
		rec := httptest.NewRecorder()
		WriteProblem(rec, p)
		if p.Status != http.StatusInternalServerError || rec.Code != http.StatusInternalServerError || p.Code != idem.CodeStoreUnavailable {
			t.Errorf("status %d: problem %+v answered %d", status, p, rec.Code)
		}
	}
	if p := problemOf(&idem.Error{Code: idem.CodeInProgress, Status: http.StatusAccepted}); p.Status != http.StatusAccepted {
		t.Errorf("202 by policy became %d", p.Status)
	}
}

// TestRawFingerprintPreImage: the fingerprint of a body that is not JSON is
// the documented pre-image, computed here independently: it opens with
// RawDomainTag (not fingerprint.DomainTag), and the media type is a field of
// its own, so the same bytes as two media types are two requests.
func TestRawFingerprintPreImage(t *testing.T) {
	field := func(s string) []byte {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		return append(n[:], s...)
	}
	var pre []byte
	for _, f := range []string{"idem/http/raw/v1", "orders.import", "text/csv", "a,b\n1,2\n"} {
		pre = append(pre, field(f)...)
	}
	if got, want := rawFingerprint("orders.import", "text/csv", []byte("a,b\n1,2\n")), idem.Fingerprint(sha256.Sum256(pre)); got != want {
		t.Fatalf("raw fingerprint %x, want the documented pre-image's %x", got, want)
	}
	if RawDomainTag == fingerprint.DomainTag {
		t.Fatal("a raw body and a JSON body share the domain tag")
	}
	body := []byte(`{"a":1}`)
	if rawFingerprint("u", "text/csv", body) == rawFingerprint("u", "application/octet-stream", body) {
		t.Error("the media type does not count")
	}
	spec, err := fingerprint.NewSpec("u", 1)
	if err != nil {
		t.Fatal(err)
	}
	if asJSON, err := spec.Of(body); err != nil || asJSON == rawFingerprint("u", "application/json", body) {
		t.Errorf("the same bytes as JSON and as raw: %v, same fingerprint", err)
	}
}

// TestProblemTypeURIsAreStable pins every problem's type URI and code as a
// client compares them: a renamed code or a moved page fails here.
func TestProblemTypeURIsAreStable(t *testing.T) {
	const page = "https://github.com/idemkit/idem/blob/main/idemhttp/problems.md#"
	want := map[idem.Code]string{
		idem.CodeInvalidKey:       page + "invalid_key",
		idem.CodeInvalidRequest:   page + "invalid_request",
		idem.CodeKeyMisuse:        page + "key_misuse",
		idem.CodeInProgress:       page + "in_progress",
		idem.CodeOutcomeUnknown:   page + "outcome_unknown",
		idem.CodeNotExecuted:      page + "not_executed",
		idem.CodeStoreUnavailable: page + "idempotency_store_unavailable",
		idem.CodeStoreRejected:    page + "idempotency_store_rejected",
		idem.CodeResponseInvalid:  page + "response_invalid",
		CodeRequestTooLarge:       page + "request_too_large",
		CodeUnauthenticated:       page + "unauthenticated",
		CodeUnsupportedMediaType:  page + "unsupported_media_type",
		CodeRequestCancelled:      page + "request_cancelled",
	}
	codes := ProblemCodes()
	if len(codes) != len(want) {
		t.Fatalf("ProblemCodes() has %d codes, want %d", len(codes), len(want))
	}
	for _, c := range codes {
		uri, ok := want[c]
		if p := NewProblem(c, http.StatusBadRequest, ""); !ok || p.Type != uri || p.Code != c {
			t.Errorf("code %q: type %q, want %q", c, p.Type, uri)
		}
	}
}

// TestRetryAfterOnEveryComeBackProblem: each problem that tells the client
// to come back (in_progress as 409 and as 202, outcome_unknown,
// idempotency_store_unavailable) has Retry-After in whole seconds, rounded
// up, at least 1, and the same number in the body; the others have none.
func TestRetryAfterOnEveryComeBackProblem(t *testing.T) {
	comeBack := []*idem.Error{
		idem.ErrInProgress, {Code: idem.CodeInProgress, Status: http.StatusAccepted}, idem.ErrOutcomeUnknown, idem.ErrStoreUnavailable,
	}
	for _, sentinel := range comeBack {
		for d, want := range map[time.Duration]string{0: "1", 300 * time.Millisecond: "1", 1500 * time.Millisecond: "2", 3 * time.Second: "3"} {
			e := *sentinel
			e.RetryAfter = d
			rec := httptest.NewRecorder()
			p := problemOf(&e)
			WriteProblem(rec, p)
			if got := rec.Header().Get("Retry-After"); got != want || strconv.FormatInt(p.RetryAfterSeconds, 10) != want ||
				!strings.Contains(rec.Body.String(), `"retryAfterSeconds":`+want) || rec.Code != sentinel.Status {
				t.Errorf("%s %d after %v: Retry-After %q, body %s; want %s", e.Code, rec.Code, d, got, rec.Body, want)
			}
		}
	}
	for _, e := range []*idem.Error{idem.ErrInvalidKey, idem.ErrInvalidRequest, idem.ErrKeyMisuse, idem.ErrNotExecuted, idem.ErrStoreRejected, idem.ErrResponseInvalid} {
		rec := httptest.NewRecorder()
		WriteProblem(rec, problemOf(e))
		if got := rec.Header().Get("Retry-After"); got != "" || rec.Code != e.Status {
			t.Errorf("%s: %d with Retry-After %q, want %d and none", e.Code, rec.Code, got, e.Status)
		}
	}
}

// FuzzKeyOf: no header value makes keyOf panic, and a key it accepts from
// one line is one key: a bare key never holds a comma.
func FuzzKeyOf(f *testing.F) {
	for _, seed := range []string{
		`"0123456789abcdef";a=1;b=?0`, `"k";;;garbage!!`, `"k";a=%"%c3%a9"`, `"k";a=:aGk=:`, `"k";a=-1.5`,
		`"k";a=@1`, `"k", "l"`, "k, l", `"k`, `"\`, `"k";a=`, `"k";a=%"%`, `"k";a=:`, `"k";a=?`, `"k"   `,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		key, _, err := keyOf(http.Header{KeyHeaderDefault: {v}}, KeyHeaderDefault)
		if err == nil && v[0] != '"' && strings.Contains(key, ",") {
			t.Fatalf("%q: accepted the bare list %q", v, key)
		}
	})
}

// storedFP is the cause an ErrKeyMisuse carries when the executor hands
// over the record's fingerprint.
type storedFP idem.Fingerprint

func (s storedFP) Error() string                       { return "stored fingerprint" }
func (s storedFP) StoredFingerprint() idem.Fingerprint { return idem.Fingerprint(s) }

// TestMismatchNamesWhatDiffers: given the stored fingerprint, a 422 names
// exactly the parts of the request that differ (method, path, query, body);
// without it, or for a fingerprint of another layout, it names every part
// that counts, and never calls a query "another payload".
func TestMismatchNamesWhatDiffers(t *testing.T) {
	bodyA := rawFingerprint("u", "application/json", []byte(`{"a":1}`))
	bodyB := rawFingerprint("u", "application/json", []byte(`{"a":2}`))
	first := requestFingerprint(bodyA, "POST", "/accounts/a/payments")
	for _, c := range []struct {
		name string
		fp   idem.Fingerprint
		want string
	}{
		{"a query", requestFingerprint(bodyA, "POST", "/accounts/a/payments?x=1"), "(its query differs)"},
		{"an empty query", requestFingerprint(bodyA, "POST", "/accounts/a/payments?"), "(its query differs)"},
		{"a path", requestFingerprint(bodyA, "POST", "/accounts/b/payments"), "(its path differs)"},
		{"a method", requestFingerprint(bodyA, "PATCH", "/accounts/a/payments"), "(its method differs)"},
		{"a body", requestFingerprint(bodyB, "POST", "/accounts/a/payments"), "(its body differs)"},
		{"path and query", requestFingerprint(bodyA, "POST", "/accounts/b/payments?x=1"), "(its path and query differ)"},
		{"all", requestFingerprint(bodyB, "PUT", "/accounts/b/payments?x=1"), "(its method, path, query and body differ)"},
	} {
		e := &idem.Error{Code: idem.CodeKeyMisuse, Status: http.StatusUnprocessableEntity, Err: storedFP(first)}
		if got := describeMismatch(e, c.fp); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	query := requestFingerprint(bodyA, "POST", "/accounts/a/payments?x=1")
	var otherLayout idem.Fingerprint
	copy(otherLayout[:], sha256.New().Sum(nil)) // a v1 record: no tags
	for name, e := range map[string]*idem.Error{
		"no stored fingerprint": idem.ErrKeyMisuse,
		"another layout":        {Code: idem.CodeKeyMisuse, Err: storedFP(otherLayout)},
	} {
		if got := describeMismatch(e, query); got != misuseDetailUnknown || strings.Contains(got, "payload") {
			t.Errorf("%s: %q, want %q", name, got, misuseDetailUnknown)
		}
	}
}

// TestRequestFingerprintPreImage: the request's fingerprint is the
// documented layout, computed here independently.
func TestRequestFingerprintPreImage(t *testing.T) {
	field := func(b []byte) []byte { return append(binary.BigEndian.AppendUint64(nil, uint64(len(b))), b...) }
	fnvFold := func(s string) byte {
		h := uint32(2166136261)
		for _, c := range []byte(s) {
			h = (h ^ uint32(c)) * 16777619
		}
		return byte(h) ^ byte(h>>8) ^ byte(h>>16) ^ byte(h>>24)
	}
	body := rawFingerprint("u", "text/csv", []byte("a,b\n"))
	var pre []byte
	for _, f := range [][]byte{[]byte("idem/http/target/v2"), body[:], []byte("POST"), []byte("/p/1?x=1")} {
		pre = append(pre, field(f)...)
	}
	digest := sha256.Sum256(pre)
	want := idem.Fingerprint(append(digest[:27:27], 0x02, fnvFold("POST"), fnvFold("/p/1"), fnvFold("?x=1"), fnvFold(string(body[:]))))
	if got := requestFingerprint(body, "POST", "/p/1?x=1"); got != want {
		t.Fatalf("request fingerprint %x, want the documented %x", got, want)
	}
}
