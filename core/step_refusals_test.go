package core

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestStepRefusesWhatIsNotAScope: Step answers an error for every scope that
// Scope.Validate refuses, on every event kind, and the same error; a host in
// another runtime has no other validation. A reserve is held to the policy's
// KeyBytesMax, every other event to KeyBytesMax (a record created under a
// laxer policy must still be swept and settled).
func TestStepRefusesWhatIsNotAScope(t *testing.T) {
	kinds := []EventKind{EventReserve, EventComplete, EventFail, EventMarkUnknown, EventHeartbeat, EventResolve, EventSweep, EventEvict}
	rapid.Check(t, func(t *rapid.T) {
		scope := drawScope(t)
		p := PolicyDefault()
		p.KeyBytesMax = rapid.SampledFrom([]int{KeyBytesMin, 64, KeyBytesMax}).Draw(t, "key bytes max")
		ev := Event{Kind: rapid.SampledFrom(kinds).Draw(t, "kind"), Now: t0, Token: 7, Fingerprint: fpA,
			Verdict: VerdictStillUnknown, Response: Response{StatusCode: 200}}
		limit := KeyBytesMax
		if ev.Kind == EventReserve {
			limit = p.KeyBytesMax
		}
		rec := Record{Scope: scope}
		_, err := Step(&rec, &ev, &p)
		want := scope.Validate(limit)
		switch {
		case want != nil && (err == nil || err.Error() != want.Error()):
			t.Fatalf("%v on %q (limit %d): Step says %v, Validate %v", ev.Kind, scope, limit, err, want)
		case want == nil && err != nil:
			t.Fatalf("%v on valid %q: %v", ev.Kind, scope, err)
		}
		if err != nil && (rec.Scope != scope || rec.Status != StatusAbsent) {
			t.Fatalf("refused, and the record changed: %s", rec.Describe())
		}
	})
}

// TestStepKeyLimitIsPerEvent: a key of 65 bytes under a policy of 64 is
// refused for a reserve and accepted for a sweep of its existing record.
func TestStepKeyLimitIsPerEvent(t *testing.T) {
	p := PolicyDefault()
	p.KeyBytesMax = 64
	for n, want := range map[int]error{64: nil, 65: ErrInvalidKey} {
		rec := Record{Scope: scopeA}
		rec.Scope.Key = strings.Repeat("k", n)
		if _, err := Step(&rec, &Event{Kind: EventReserve, Now: t0, Token: 1, Fingerprint: fpA}, &p); !errors.Is(err, want) {
			t.Fatalf("reserve of a %d-byte key: %v, want %v", n, err, want)
		}
	}
	rec := Record{Scope: scopeA, Status: StatusInProgress, Fingerprint: fpA, Token: 1, Version: 1, LockedUntil: t0}
	rec.Scope.Key = strings.Repeat("k", 65)
	tr, err := Step(&rec, &Event{Kind: EventSweep, Now: t0.Add(time.Second)}, &p)
	if err != nil || tr.Decision.Kind != DecisionLeaseExpired {
		t.Fatalf("sweep of a record with a 65-byte key: %v, %v", tr.Decision.Kind, err)
	}
	rec.Scope.Key = strings.Repeat("k", KeyBytesMax+1)
	if _, err := Step(&rec, &Event{Kind: EventSweep, Now: t0.Add(time.Second)}, &p); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("sweep of a record with a %d-byte key: %v", KeyBytesMax+1, err)
	}
}

// TestValidateErrorCodeIsTheTokenAlphabet: every byte value, alone, at the
// start and at the end of a code, is accepted exactly when it is an RFC 9110
// token character; ErrorCodeBytesMax bytes pass and one more does not.
func TestValidateErrorCodeIsTheTokenAlphabet(t *testing.T) {
	const tchar = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for c := 0; c < 256; c++ {
		want := strings.IndexByte(tchar, byte(c)) >= 0
		for _, code := range []ErrorCode{ErrorCode([]byte{byte(c)}), "a" + ErrorCode([]byte{byte(c)}), ErrorCode([]byte{byte(c)}) + "z"} {
			if err := ValidateErrorCode(code); (err == nil) != want || (err != nil && !errors.Is(err, ErrInvalidErrorCode)) {
				t.Fatalf("byte 0x%02x in %q: %v, want accepted %t", c, code, err, want)
			}
		}
	}
	if err := ValidateErrorCode(""); err != nil {
		t.Fatalf("empty code: %v", err)
	}
	if err := ValidateErrorCode(ErrorCode(strings.Repeat("x", ErrorCodeBytesMax))); err != nil {
		t.Fatalf("%d bytes: %v", ErrorCodeBytesMax, err)
	}
	if err := ValidateErrorCode(ErrorCode(strings.Repeat("x", ErrorCodeBytesMax+1))); !errors.Is(err, ErrInvalidErrorCode) {
		t.Fatalf("%d bytes: %v", ErrorCodeBytesMax+1, err)
	}
	for _, code := range []ErrorCode{ErrorCodeLeaseExpired, ErrorCodeNotExecuted, ErrorCodeUnknown, ErrorCodeReconciled} {
		if err := ValidateErrorCode(code); err != nil {
			t.Fatalf("the core's own %q: %v", code, err)
		}
	}
}

// TestStepRefusesBadErrorCodes: Fail, MarkUnknown and a still-unknown Resolve
// refuse a code ValidateErrorCode refuses, whatever the record (the owner's
// in_progress one, another attempt's, none), and change nothing; the kinds
// whose ErrorCode does not count ignore it.
func TestStepRefusesBadErrorCodes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		code := ErrorCode(rapid.SliceOfN(rapid.SampledFrom([]byte("ab_\x00\x7f\xe9 \n;")), 0, 70).Draw(t, "code"))
		ev := Event{Now: t0.Add(time.Second), Token: 1, ErrorCode: code, Fingerprint: fpA, Response: Response{StatusCode: 200}}
		ev.Kind = rapid.SampledFrom([]EventKind{EventFail, EventMarkUnknown, EventResolve, EventComplete, EventHeartbeat, EventSweep}).Draw(t, "kind")
		ev.Verdict = rapid.SampledFrom([]Verdict{VerdictExecuted, VerdictNotExecuted, VerdictStillUnknown}).Draw(t, "verdict")
		rec := Record{Scope: scopeA, Status: StatusInProgress, Fingerprint: fpA, Token: 1, Version: 1, LockedUntil: t0.Add(time.Minute)}
		switch rapid.IntRange(0, 2).Draw(t, "record") {
		case 1:
			rec.Status, rec.ReconcileAfter = StatusUnknown, t0
		case 2:
			rec = Record{Scope: scopeA}
		}
		before := rec.Describe()
		p := PolicyDefault()
		_, err := Step(&rec, &ev, &p)
		counts := ev.Kind == EventFail || ev.Kind == EventMarkUnknown || (ev.Kind == EventResolve && ev.Verdict == VerdictStillUnknown)
		bad := ValidateErrorCode(code) != nil
		if counts && bad {
			if !errors.Is(err, ErrInvalidErrorCode) || rec.Describe() != before {
				t.Fatalf("%v with code %q: %v, record %s", ev.Kind, code, err, rec.Describe())
			}
			return
		}
		if errors.Is(err, ErrInvalidErrorCode) {
			t.Fatalf("%v (verdict %v) with code %q, which does not count: %v", ev.Kind, ev.Verdict, code, err)
		}
	})
}

// TestCountersAtTheirEnd: a record at the last version is refused, not
// wrapped to 0 (after which the core would refuse it as corrupt); the
// reconcile attempts saturate, so a record given up stays given up; a
// policy may allow responses up to ResponseBytesMax and not one byte more.
func TestCountersAtTheirEnd(t *testing.T) {
	p := PolicyDefault()
	last := Record{Scope: scopeA, Status: StatusInProgress, Fingerprint: fpA, Token: 1, Version: math.MaxUint64, LockedUntil: t0}
	if _, err := Step(&last, &Event{Kind: EventSweep, Now: t0.Add(time.Second)}, &p); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("a record at version 2^64-1: %v", err)
	}
	last.Version = math.MaxUint64 - 1
	if tr, err := Step(&last, &Event{Kind: EventSweep, Now: t0.Add(time.Second)}, &p); err != nil || last.Version != math.MaxUint64 || tr.Write.ExpectVersion != math.MaxUint64-1 {
		t.Fatalf("the last bump: %v, version %d", err, last.Version)
	}

	p.ReconcileAttemptsMax = math.MaxUint32
	unknown := Record{Scope: scopeA, Status: StatusUnknown, Fingerprint: fpA, Token: 1, Version: 1, ReconcileAttempts: math.MaxUint32, ReconcileAfter: t0}
	tr, err := Step(&unknown, &Event{Kind: EventResolve, Now: t0, Token: 1, Verdict: VerdictStillUnknown}, &p)
	if err != nil || tr.Decision.Kind != DecisionAbandoned || unknown.ReconcileAttempts != math.MaxUint32 || !unknown.ReconcileAfter.IsZero() {
		t.Fatalf("still unknown at 2^32-1 attempts: %v %v, %s", tr.Decision.Kind, err, unknown.Describe())
	}

	p = PolicyDefault()
	p.ResponseBytesMax = ResponseBytesMax
	if err := p.Validate(); err != nil {
		t.Fatalf("ResponseBytesMax at the limit: %v", err)
	}
	p.ResponseBytesMax++
	if err := p.Validate(); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("ResponseBytesMax one past the limit: %v", err)
	}
}
