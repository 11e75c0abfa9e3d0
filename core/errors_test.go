package core

import (
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBadInputIsAnError(t *testing.T) {
	def := PolicyDefault()
	ip := inProgress(7)
	policy := func(f func(*Policy)) Policy { p := def; f(&p); return p }
	scoped := func(f func(*Scope)) Record { r := Record{Scope: scopeA}; f(&r.Scope); return r }
	reserve := Event{Kind: EventReserve, Now: t0, Fingerprint: fpA, Token: 1}
	big := Response{StatusCode: 200, Body: make([]byte, def.ResponseBytesMax+1)}
	cases := []struct {
		name   string
		cur    Record
		ev     Event
		policy Policy
		want   error
	}{
		{"unknown event kind", ip, Event{Kind: 99, Now: t0, Token: 7}, def, ErrUnknownEvent},
		{"zero event kind", ip, Event{Now: t0, Token: 7}, def, ErrUnknownEvent},
		{"zero time", ip, Event{Kind: EventSweep}, def, ErrTimeMissing},
		{"zero fingerprint", Record{Scope: scopeA}, Event{Kind: EventReserve, Now: t0, Token: 1}, def, ErrFingerprintMissing},
		{"reserve without token", Record{Scope: scopeA}, Event{Kind: EventReserve, Now: t0, Fingerprint: fpA}, def, ErrTokenMissing},
		{"reserve with old token", withStatus(ip, StatusFailedRetryable), Event{Kind: EventReserve, Now: t0, Fingerprint: fpA, Token: 7}, def, ErrTokenNotFresh},
		{"reserve over dead record with old token", withStatus(ip, StatusExpired), Event{Kind: EventReserve, Now: t0, Fingerprint: fpB, Token: 3}, def, ErrTokenNotFresh},
		{"complete without token", ip, Event{Kind: EventComplete, Now: t0, Response: resp1}, def, ErrTokenMissing},
		{"heartbeat without token", ip, Event{Kind: EventHeartbeat, Now: t0}, def, ErrTokenMissing},
		{"response over the size limit", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: big}, def, ErrResponseTooLarge},
		{"response with a bad status code", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: Response{StatusCode: 42}}, def, ErrResponseInvalid},
		{"response with an unnamed header", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: Response{StatusCode: 200, Headers: []Header{{"", "b"}}}}, def, ErrResponseInvalid},
		{"headers over the size limit", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: Response{StatusCode: 200, Headers: []Header{{"X-A", strings.Repeat("v", def.ResponseBytesMax)}}}}, def, ErrResponseTooLarge},
		{"response with a 1xx status", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: Response{StatusCode: 103}}, def, ErrResponseInvalid},
		{"response status 600", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: Response{StatusCode: 600}}, def, ErrResponseInvalid},
		{"204 with a body", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: Response{StatusCode: 204, Body: []byte("x")}}, def, ErrResponseInvalid},
		{"304 with a body", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: Response{StatusCode: 304, Body: []byte("x")}}, def, ErrResponseInvalid},
		{"header name with CR LF (injection)", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: Response{StatusCode: 200, Headers: []Header{{"X-A\r\nSet-Cookie", "a=b"}}}}, def, ErrResponseInvalid},
		{"header name with a space", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: Response{StatusCode: 200, Headers: []Header{{"X A", "b"}}}}, def, ErrResponseInvalid},
		{"header name with a colon", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: Response{StatusCode: 200, Headers: []Header{{"X-A:", "b"}}}}, def, ErrResponseInvalid},
		{"header value with LF", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: Response{StatusCode: 200, Headers: []Header{{"X-A", "b\nSet-Cookie: c=d"}}}}, def, ErrResponseInvalid},
		{"header value with NUL", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: Response{StatusCode: 200, Headers: []Header{{"X-A", "b\x00"}}}}, def, ErrResponseInvalid},
		{"header value with DEL", ip, Event{Kind: EventComplete, Now: t0, Token: 7, Response: Response{StatusCode: 200, Headers: []Header{{"X-A", "b\x7f"}}}}, def, ErrResponseInvalid},
		{"resolve executed with an injected header", withStatus(ip, StatusUnknown), Event{Kind: EventResolve, Now: t0, Token: 7, Verdict: VerdictExecuted, Response: Response{StatusCode: 200, Headers: []Header{{"X-A\r\nSet-Cookie", "a"}}}}, def, ErrResponseInvalid},
		{"resolve executed with a 1xx", withStatus(ip, StatusUnknown), Event{Kind: EventResolve, Now: t0, Token: 7, Verdict: VerdictExecuted, Response: Response{StatusCode: 100}}, def, ErrResponseInvalid},
		{"resolve executed with a 204 body", withStatus(ip, StatusUnknown), Event{Kind: EventResolve, Now: t0, Token: 7, Verdict: VerdictExecuted, Response: Response{StatusCode: 204, Body: []byte("x")}}, def, ErrResponseInvalid},
		{"resolve without a verdict", withStatus(ip, StatusUnknown), Event{Kind: EventResolve, Now: t0, Token: 7}, def, ErrUnknownVerdict},
		{"resolve executed with an invalid response", withStatus(ip, StatusUnknown), Event{Kind: EventResolve, Now: t0, Token: 7, Verdict: VerdictExecuted}, def, ErrResponseInvalid},
		{"TTL over the cap", ip, reserve, policy(func(p *Policy) { p.TTL = TTLMax + time.Nanosecond }), ErrInvalidPolicy},
		{"non-positive lease", ip, reserve, policy(func(p *Policy) { p.LeaseDuration = 0 }), ErrInvalidPolicy},
		{"zero policy", ip, reserve, Policy{}, ErrInvalidPolicy},
		{"backoff cap below base", ip, reserve, policy(func(p *Policy) { p.ReconcileBackoffMax = time.Millisecond }), ErrInvalidPolicy},
		{"key bytes max over the limit", ip, reserve, policy(func(p *Policy) { p.KeyBytesMax = 256 }), ErrInvalidPolicy},
		{"unknown expiry mode", ip, reserve, policy(func(p *Policy) { p.Expiry = 7 }), ErrInvalidPolicy},
		{"record with unknown status", Record{Scope: scopeA, Status: 42}, reserve, def, ErrInvalidRecord},
		{"record with version 0", func() Record { r := ip; r.Version = 0; return r }(), reserve, def, ErrInvalidRecord},
		{"record without token", func() Record { r := ip; r.Token = 0; return r }(), reserve, def, ErrInvalidRecord},
		{"empty key", scoped(func(s *Scope) { s.Key = "" }), reserve, def, ErrInvalidKey},
		{"short key", scoped(func(s *Scope) { s.Key = strings.Repeat("k", KeyBytesMin-1) }), reserve, def, ErrInvalidKey},
		{"long key", scoped(func(s *Scope) { s.Key = strings.Repeat("k", KeyBytesMax+1) }), reserve, def, ErrInvalidKey},
		{"key with a control character", scoped(func(s *Scope) { s.Key = "0123456789abcdef\x00" }), reserve, def, ErrInvalidKey},
		{"key with a leading space", scoped(func(s *Scope) { s.Key = " 0123456789abcdef" }), reserve, def, ErrInvalidKey},
		{"key with a trailing space", scoped(func(s *Scope) { s.Key = "0123456789abcdef " }), reserve, def, ErrInvalidKey},
		{"key of spaces only", scoped(func(s *Scope) { s.Key = strings.Repeat(" ", 20) }), reserve, def, ErrInvalidKey},
		{"tombstone retention over the cap", ip, reserve, policy(func(p *Policy) { p.TombstoneRetention = TTLMax + 1 }), ErrInvalidPolicy},
		{"zero tombstone retention", ip, reserve, policy(func(p *Policy) { p.TombstoneRetention = 0 }), ErrInvalidPolicy},
		{"key with DEL", scoped(func(s *Scope) { s.Key = "0123456789abcdef\x7f" }), reserve, def, ErrInvalidKey},
		{"non-ASCII key", scoped(func(s *Scope) { s.Key = "0123456789abcdéf" }), reserve, def, ErrInvalidKey},
		{"key over the policy's limit", scoped(func(s *Scope) { s.Key = strings.Repeat("k", 40) }), reserve, policy(func(p *Policy) { p.KeyBytesMax = 32 }), ErrInvalidKey},
		{"empty principal", scoped(func(s *Scope) { s.Principal = "" }), reserve, def, ErrInvalidScope},
		{"empty use case", scoped(func(s *Scope) { s.UseCase = "" }), reserve, def, ErrInvalidScope},
		{"tenant with invalid UTF-8", scoped(func(s *Scope) { s.Tenant = "a\xffb" }), reserve, def, ErrInvalidScope},
		{"principal with a newline", scoped(func(s *Scope) { s.Principal = "a\nb" }), reserve, def, ErrInvalidScope},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := step(c.cur, c.ev, c.policy)
			if c.want == ErrInvalidKey || c.want == ErrInvalidScope {
				// Scopes are checked once at the edge (the executor), not on every Step.
				err = c.cur.Scope.Validate(c.policy.KeyBytesMax)
			} else if r.Write.Kind != WriteNone || r.Decision.Kind != DecisionInvalid || r.Next.Describe() != c.cur.Describe() {
				t.Fatalf("an error came with a result or a changed record: %s / %s", r.Describe(), r.Next.Describe())
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), "idem/core") {
				t.Fatalf("error %q does not say where it comes from", err)
			}
		})
	}
}

func TestValidKeys(t *testing.T) {
	for _, k := range []string{
		"550e8400-e29b-41d4-a716-446655440000",
		strings.Repeat("k", KeyBytesMin),
		strings.Repeat("k", KeyBytesMax),
		"with space and ~!@#$%^&*()",
	} {
		if err := ValidateKey(k, KeyBytesMax); err != nil {
			t.Errorf("ValidateKey(%q) = %v", k, err)
		}
	}
	s := scopeA
	s.Tenant = ""
	if err := s.Validate(KeyBytesMax); err != nil {
		t.Errorf("empty tenant refused: %v", err)
	}
}

func TestFingerprintParsing(t *testing.T) {
	if _, err := FingerprintFromBytes(make([]byte, 31)); !errors.Is(err, ErrFingerprintLength) {
		t.Fatalf("31 bytes: %v", err)
	}
	if _, err := FingerprintFromBytes(make([]byte, 33)); !errors.Is(err, ErrFingerprintLength) {
		t.Fatalf("33 bytes: %v", err)
	}
	f, err := FingerprintFromBytes(fpA[:])
	if err != nil || f != fpA {
		t.Fatalf("round trip: %v %v", f, err)
	}
	g, err := ParseFingerprint(fpA.String())
	if err != nil || g != fpA {
		t.Fatalf("hex round trip: %v %v", g, err)
	}
	if fpA.String() != hex.EncodeToString(fpA[:]) || fpA.Short() != hex.EncodeToString(fpA[:4]) {
		t.Fatalf("hex form %s differs from encoding/hex's", fpA)
	}
	if u, err := ParseFingerprint(strings.ToUpper(fpA.String())); err != nil || u != fpA {
		t.Fatalf("uppercase: %v %v", u, err)
	}
	for _, s := range []string{"", "abc", fpA.String()[:63] + "z", "g" + fpA.String()[1:], fpA.String()[:10] + "-" + fpA.String()[11:], fpA.String() + "00"} {
		if _, err := ParseFingerprint(s); !errors.Is(err, ErrFingerprintLength) {
			t.Errorf("ParseFingerprint(%q) = %v", s, err)
		}
	}
	if _, err := ParseFingerprint(fpA.String()[:10] + "-" + fpA.String()[11:]); err == nil || !strings.Contains(err.Error(), `"-" at 10`) {
		t.Errorf("the error does not name the bad digit: %v", err)
	}
}

func TestEnumStrings(t *testing.T) {
	seen := map[string]bool{}
	for s := Status(0); s < statusCount; s++ {
		seen[s.String()] = true
	}
	for k := EventKind(0); k < eventCount; k++ {
		seen["event "+k.String()] = true
	}
	for k := DecisionKind(0); k < decisionCount; k++ {
		seen["decision "+k.String()] = true
	}
	if len(seen) != int(statusCount)+int(eventCount)+int(decisionCount) {
		t.Fatalf("enum names are not distinct: %v", seen)
	}
	if got := Status(200).String(); got != "status(200)" {
		t.Fatalf("out of range status: %q", got)
	}
	if got := DecisionKind(200).String(); got != "decision(200)" {
		t.Fatalf("out of range decision: %q", got)
	}
}

// TestPolicyValidateNamesEachField: every out-of-range field is refused,
// and the message says which one.
func TestPolicyValidateNamesEachField(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*Policy)
	}{
		{"lease", func(p *Policy) { p.LeaseDuration = -1 }},
		{"TTL", func(p *Policy) { p.TTL = 0 }},
		{"cap", func(p *Policy) { p.TTL = TTLMax + 1 }},
		{"in-flight wait", func(p *Policy) { p.InFlightWait = -1 }},
		{"in_flight_answer", func(p *Policy) { p.InFlightAnswer = 9 }},
		{"retry-after", func(p *Policy) { p.RetryAfter = 0 }},
		{"expiry_mode", func(p *Policy) { p.Expiry = 9 }},
		{"fail_mode", func(p *Policy) { p.Fail = 9 }},
		{"backoff base", func(p *Policy) { p.ReconcileBackoffBase = 0 }},
		{"backoff cap", func(p *Policy) { p.ReconcileBackoffMax = p.ReconcileBackoffBase - 1 }},
		{"attempts max", func(p *Policy) { p.ReconcileAttemptsMax = 0 }},
		{"key bytes max", func(p *Policy) { p.KeyBytesMax = KeyBytesMin - 1 }},
		{"request bytes max", func(p *Policy) { p.RequestBytesMax = 0 }},
		{"response bytes max", func(p *Policy) { p.ResponseBytesMax = -5 }},
	} {
		p := PolicyDefault()
		c.mutate(&p)
		err := p.Validate()
		if !errors.Is(err, ErrInvalidPolicy) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	p := PolicyDefault()
	if err := p.Validate(); err != nil {
		t.Fatalf("the default policy is invalid: %v", err)
	}
	for _, s := range []fmt.Stringer{InFlightConflict, InFlightAccepted, ExpirySoft, ExpiryHard, FailKeep, FailEvict} {
		if s.String() == "" || strings.Contains(s.String(), "(") {
			t.Errorf("%#v has no name", s)
		}
	}
}

func TestResponseCloneIsDeep(t *testing.T) {
	r := Response{StatusCode: 201, Headers: []Header{{"A", "b"}}, Body: []byte("body"), SchemaVersion: 2}
	c := r.Clone()
	if !c.Equal(r) || r.Bytes() != len("body")+len("A")+len("b") {
		t.Fatalf("clone %s, bytes %d", c.Describe(), r.Bytes())
	}
	c.Body[0], c.Headers[0].Value = 'X', "changed"
	if r.Body[0] != 'b' || r.Headers[0].Value != "b" || c.Equal(r) {
		t.Fatal("the clone shares memory with the original")
	}
	if (Response{}).Clone().Body != nil {
		t.Fatal("the clone of an empty body is not empty")
	}
}

// TestRefusedKnowsEveryError: Refused recognises every error the core
// declares, wrapped or not, and nothing else. The declared errors are read
// from errors.go, so that a new one left out of refusals fails here.
func TestRefusedKnowsEveryError(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared, listed := map[string]bool{}, map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for _, name := range n.Names {
				if strings.HasPrefix(name.Name, "Err") {
					declared[name.Name] = true
				}
				if name.Name == "refusals" {
					for _, e := range n.Values[0].(*ast.CompositeLit).Elts {
						listed[e.(*ast.Ident).Name] = true
					}
				}
			}
		}
		return true
	})
	if len(declared) == 0 || !maps.Equal(declared, listed) {
		t.Fatalf("errors.go declares %v, refusals lists %v", slices.Sorted(maps.Keys(declared)), slices.Sorted(maps.Keys(listed)))
	}
	for _, e := range refusals {
		if !Refused(e) || !Refused(fmt.Errorf("context: %w", e)) {
			t.Errorf("Refused(%v) = false", e)
		}
	}
	if Refused(nil) || Refused(errors.New("idem/core: look-alike")) {
		t.Error("Refused accepts an error the core does not declare")
	}
}

// TestResponseRulesAcceptWhatHTTPReplays: the rules refuse only what HTTP
// cannot replay; every other token character, a tab in a value, obs-text and
// an empty 204 or 304 are stored.
func TestResponseRulesAcceptWhatHTTPReplays(t *testing.T) {
	def := PolicyDefault()
	for _, r := range []Response{
		{StatusCode: 200, Headers: []Header{{"!#$%&'*+-.^_`|~09azAZ", "a\tb é \x80\xff"}}},
		{StatusCode: 204},
		{StatusCode: 304, Headers: []Header{{"ETag", `"x"`}}},
		{StatusCode: 599, Body: []byte("x")},
		{StatusCode: 200, Headers: []Header{{"X-Empty", ""}}},
	} {
		if _, err := step(inProgress(7), Event{Kind: EventComplete, Now: t0, Token: 7, Response: r}, def); err != nil {
			t.Errorf("%s refused: %v", r.Describe(), err)
		}
	}
}
