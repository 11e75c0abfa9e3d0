package sim

import (
	"strconv"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// TestFencingHoldsEveryWriteKind: an update or a delete that expected
// another attempt's token than the record's must not have applied
// (invariant 4); one that expected the record's own token is fine.
func TestFencingHoldsEveryWriteKind(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	key := reqs[0].key
	prev := core.Record{Scope: key, Status: core.StatusInProgress, Token: 10, Version: 1, CreatedAt: epoch}
	for _, kind := range []core.WriteKind{core.WriteUpdate, core.WriteDelete} {
		for _, expectToken := range []core.Token{9, 10} {
			rec := core.Record{Scope: key}
			if kind == core.WriteUpdate {
				rec = prev
				rec.Status, rec.Version = core.StatusUnknown, 2
			}
			want := -1
			if expectToken != prev.Token {
				want = 4
			}
			w.check.write(opMeta{}, 0, &prev, &rec, kind, expectToken)
			expect(t, w, want, kind.String()+" expecting token "+strconv.Itoa(int(expectToken)))
		}
	}
}

// TestReplayFidelityComparesWholeResponses: an outcome that differs from
// the first one a client saw in its body, a header's value or name, or
// its status breaks invariant 2, as a client's answer and at the end
// against the stored record; a copy of the same bytes does not.
func TestReplayFidelityComparesWholeResponses(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	req := reqs[0]
	first := paidResponse(req)
	for _, c := range []struct {
		what string
		edit func(*core.Response)
		want int
	}{
		{"a copy", func(*core.Response) {}, -1},
		{"another body", func(r *core.Response) { r.Body[2] ^= 1 }, 2},
		{"another header value", func(r *core.Response) { r.Headers[1].Value = "text/plain" }, 2},
		{"another header name", func(r *core.Response) { r.Headers[1].Name = "Content-Length" }, 2},
		{"another status", func(r *core.Response) { r.StatusCode = 200 }, 2},
	} {
		later := copyResponse(first)
		c.edit(&later)
		w.check.books[req.scope].lives = nil // a new case: no outcome seen yet
		w.check.answer(req, &answer{status: first.StatusCode, definitive: true, response: copyResponse(first), token: 7})
		w.check.answer(req, &answer{status: later.StatusCode, definitive: true, response: later, token: 7})
		expect(t, w, c.want, "a replay with "+c.what)

		w.shadow[0] = core.Record{Scope: req.key, Status: core.StatusCompleted, Token: 7, Version: 2, Response: later}
		req.done = true
		w.check.final()
		expect(t, w, c.want, "a stored record with "+c.what)
	}
}

// TestEndStateHoldsEveryUnsettledRecord: at the end, a record still
// in_progress, or unknown and not given up exactly as the policy says
// (unscheduled, after the policy's maximum of still-unknown answers, as
// the record counts them and as the store applied them), breaks
// invariant 5; a record given up so is left to an operator, and so is its
// request (invariant 6).
func TestEndStateHoldsEveryUnsettledRecord(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	max := w.policy.ReconcileAttemptsMax
	if max < 2 {
		t.Fatalf("the default policy gives up after %d answers: the cases need 2 or more", max)
	}
	unknown := func(attempts uint32, scheduled bool) core.Record {
		rec := core.Record{Scope: reqs[0].key, Status: core.StatusUnknown, Token: 7, Version: 3, ReconcileAttempts: attempts}
		if scheduled {
			rec.ReconcileAfter = epoch.Add(time.Minute)
		}
		return rec
	}
	for _, c := range []struct {
		what    string
		rec     core.Record
		applied uint32 // still-unknown answers the store applied since it became unknown
		want    int
	}{
		{"in_progress", core.Record{Scope: reqs[0].key, Status: core.StatusInProgress, Token: 7, Version: 1}, 0, 5},
		{"unknown, still scheduled", unknown(1, true), 1, 5},
		{"unknown, given up at the maximum", unknown(max, false), max, -1},
		{"unknown, unscheduled one answer short of the maximum", unknown(max-1, false), max - 1, 5},
		{"unknown, counting the maximum the store never applied", unknown(max, false), max - 1, 5},
		{"unknown, at the maximum but still scheduled", unknown(max, true), max, 5},
	} {
		w.shadow[0] = c.rec
		*w.check.life.counter(0) = c.applied
		reqs[0].done = false // an abandoned record's request has no answer either
		w.check.final()
		expect(t, w, c.want, "a record "+c.what+" at the end")
	}
}

// TestLeaseLossIsEveryRefusal: once a heartbeat of an attempt is answered
// Conflict (the record is no longer in progress) or Stale (another
// attempt's), the attempt's next heartbeat or gateway call breaks
// invariant 4; after Extended, or a store error, it may go on.
func TestLeaseLossIsEveryRefusal(t *testing.T) {
	w, _ := ruleWorld(t, 1)
	for i, c := range []struct {
		d    core.DecisionKind
		err  error
		want int
	}{
		{core.DecisionConflict, nil, 4},
		{core.DecisionStale, nil, 4},
		{core.DecisionExtended, nil, -1},
		{core.DecisionConflict, errStoreDown, -1},
	} {
		token := core.Token(100 + i)
		w.check.beaten(0, token, &store.Applied{Transition: core.Transition{Decision: core.Decision{Kind: c.d}}}, c.err)
		w.check.acts(0, token, "heartbeat")
		expect(t, w, c.want, "a heartbeat after one answered "+c.d.String())
	}
}

// TestStoredSplittingHeaderIsReported: a stored response with a header
// value carrying CR, LF or NUL (response splitting on replay), or a record
// written for a key with a space at an end, breaks invariant 9; a clean
// one does not.
func TestStoredSplittingHeaderIsReported(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	key := reqs[0].key
	stored := func(k string, h core.Header) *core.Record {
		sc := key
		sc.Key = k
		return &core.Record{Scope: sc, Status: core.StatusCompleted, Token: 7, Version: 2, Response: core.Response{StatusCode: 200, Headers: []core.Header{h}}}
	}
	for _, c := range []struct {
		what string
		rec  *core.Record
		want int
	}{
		{"a clean header", stored(key.Key, core.Header{Name: "X-Gateway-Message", Value: "ok"}), -1},
		{"a header value with CR LF", stored(key.Key, splittingHeader), invBadInput},
		{"a header value with LF", stored(key.Key, core.Header{Name: "X-A", Value: "a\nb"}), invBadInput},
		{"a header value with NUL", stored(key.Key, core.Header{Name: "X-A", Value: "a\x00b"}), invBadInput},
		{"a key with a leading space", stored(" "+key.Key, core.Header{Name: "X-A", Value: "ok"}), invBadInput},
		{"a key with a trailing space", stored(key.Key+" ", core.Header{Name: "X-A", Value: "ok"}), invBadInput},
	} {
		w.check.written(0, c.rec)
		expect(t, w, c.want, c.what)
	}
}

// TestFingerprintSharedUnderAnotherSpec: two different requests whose
// servers computed one fingerprint, neither request's own (both
// fingerprinted with a wrong spec), break domain separation (invariant 3).
func TestFingerprintSharedUnderAnotherSpec(t *testing.T) {
	w, reqs := ruleWorld(t, 2)
	a, b := reqs[0], reqs[1]
	if a.fp == b.fp {
		t.Fatal("two fresh requests have one reference fingerprint")
	}
	wrong := core.Fingerprint{0xbd}
	w.check.fingerprint(a, wrong)
	expect(t, w, -1, "the first request under a wrong fingerprint")
	w.check.fingerprint(a, wrong)
	expect(t, w, -1, "the same request again")
	w.check.fingerprint(b, wrong)
	expect(t, w, 3, "another request under the same fingerprint")
}
