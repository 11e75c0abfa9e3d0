package wasmcore

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
)

// extremeCases are steps at the edges of the ABI's value ranges, which the
// generated cases do not reach: tokens and versions near 2^64-1, times far
// from the epoch (before it with nanoseconds, past int64 nanoseconds, at the
// ends of int64 seconds), the largest and negative durations, status codes
// that a 32-bit encoding would turn into valid ones, u32 counters at their
// limit, u8 enums at 255, and responses that differ from the record's only
// in nil against empty. TestDifferentialExtremes holds the wasm core to the
// native one on them, and the Node fixture carries them (buildFixture).
func extremeCases() []struct {
	name string
	c    stepCase
} {
	p := core.PolicyDefault()
	fpA, fpB := genFPs[1], genFPs[2]
	resp := core.Response{StatusCode: 201, Headers: []core.Header{{Name: "Content-Type", Value: "application/json"}}, Body: []byte(`{"ok":true}`), SchemaVersion: 1}
	at := func(sec int64, nsec int64) time.Time { return time.Unix(sec, nsec).UTC() }
	reserve := func(now time.Time, tok core.Token, fp core.Fingerprint) core.Event {
		return core.Event{Kind: core.EventReserve, Now: now, Token: tok, Fingerprint: fp}
	}
	owner := func(kind core.EventKind, now time.Time, tok core.Token) core.Event {
		ev := core.Event{Kind: kind, Now: now, Token: tok}
		if kind == core.EventComplete {
			ev.Response = resp
		}
		return ev
	}
	sweep := func(now time.Time) core.Event { return core.Event{Kind: core.EventSweep, Now: now} }
	lifecycle := func(t0 time.Time) []core.Event {
		return []core.Event{
			reserve(t0, 1, fpA), owner(core.EventHeartbeat, t0.Add(time.Second), 1), reserve(t0.Add(2*time.Second), 2, fpA),
			owner(core.EventComplete, t0.Add(3*time.Second), 1), reserve(t0.Add(4*time.Second), 3, fpA),
			sweep(t0.Add(p.TTL + time.Hour)), sweep(t0.Add(p.TTL + p.TombstoneRetention + 2*time.Hour)),
		}
	}
	withPolicy := func(f func(*core.Policy)) core.Policy { q := p; f(&q); return q }
	abs := core.Record{Scope: genScope}
	unknown := core.Record{Scope: genScope, Status: core.StatusUnknown, Fingerprint: fpA, Token: 5, Version: 3,
		LastErrorCode: core.ErrorCodeLeaseExpired, LockedUntil: genT0, ReconcileAfter: genT0, CreatedAt: genT0}
	inProgress := core.Record{Scope: genScope, Status: core.StatusInProgress, Fingerprint: fpA, Token: 1, Version: 1,
		LockedUntil: genT0.Add(p.LeaseDuration), CreatedAt: genT0}
	t1 := genT0.Add(time.Second)

	// nilOrEmpty completes an in_progress record whose stale response
	// differs from the event's only in nil against empty: the native Step
	// stores the event's, so a host that sends one as the other gets the
	// record's back.
	nilOrEmpty := func(name string, recResp, evResp core.Response) struct {
		name string
		c    stepCase
	} {
		recResp.StatusCode, recResp.SchemaVersion = 201, 1
		evResp.StatusCode, evResp.SchemaVersion = 201, 1
		r := inProgress
		r.Response = recResp
		return struct {
			name string
			c    stepCase
		}{"nil and empty, " + name, stepCase{Policy: p, Start: r, Events: []core.Event{{Kind: core.EventComplete, Now: t1, Token: 1, Response: evResp}}}}
	}

	type named = struct {
		name string
		c    stepCase
	}
	out := []named{
		{"tokens near 2^64-1", stepCase{Policy: p,
			Start: core.Record{Scope: genScope, Status: core.StatusFailedRetryable, Fingerprint: fpA, Token: math.MaxUint64 - 2, Version: 5,
				LastErrorCode: core.ErrorCodeNotExecuted, CreatedAt: genT0, ExpiresAt: genT0.Add(p.TTL)},
			Events: []core.Event{
				reserve(t1, math.MaxUint64-1, fpA), owner(core.EventFail, t1, math.MaxUint64-1),
				reserve(t1, math.MaxUint64, fpA), owner(core.EventHeartbeat, t1, math.MaxUint64),
				owner(core.EventComplete, t1, math.MaxUint64), reserve(t1, math.MaxUint64, fpA), reserve(t1, math.MaxUint64, fpB),
			}}},
		{"versions near 2^64-1", stepCase{Policy: p,
			Start: core.Record{Scope: genScope, Status: core.StatusInProgress, Fingerprint: fpA, Token: 1, Version: math.MaxUint64 - 1,
				LockedUntil: genT0.Add(p.LeaseDuration), CreatedAt: genT0},
			Events: []core.Event{owner(core.EventHeartbeat, t1, 1), owner(core.EventHeartbeat, t1, 1), owner(core.EventHeartbeat, t1, 1)}}},
		{"times before 1970, with nanoseconds", stepCase{Policy: p, Start: abs, Events: lifecycle(at(-1000, 500_000_001))}},
		{"times just before 1970", stepCase{Policy: p, Start: abs, Events: lifecycle(at(-1, 999_999_999))}},
		{"times in year 1", stepCase{Policy: p, Start: abs, Events: lifecycle(time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC))}},
		{"times past int64 nanoseconds", stepCase{Policy: p, Start: abs, Events: lifecycle(at(1<<40, 999_999_999))}},
		{"times at the least int64 seconds", stepCase{Policy: p, Start: abs, Events: lifecycle(at(math.MinInt64, 0))}},
		{"times at the most int64 seconds", stepCase{Policy: p, Start: abs, Events: lifecycle(at(math.MaxInt64, 999_999_999))}},
		{"negative and least durations, refused", stepCase{Policy: withPolicy(func(q *core.Policy) { q.LeaseDuration = -1 }), Start: abs, Events: []core.Event{reserve(t1, 1, fpA)}}},
		{"least lease", stepCase{Policy: withPolicy(func(q *core.Policy) { q.LeaseDuration = math.MinInt64 }), Start: abs, Events: []core.Event{reserve(t1, 1, fpA)}}},
		{"least in-flight wait", stepCase{Policy: withPolicy(func(q *core.Policy) { q.InFlightWait = math.MinInt64 }), Start: abs, Events: []core.Event{reserve(t1, 1, fpA)}}},
		{"least retry after", stepCase{Policy: withPolicy(func(q *core.Policy) { q.RetryAfter = math.MinInt64 }), Start: abs, Events: []core.Event{reserve(t1, 1, fpA)}}},
		{"most TTL, refused", stepCase{Policy: withPolicy(func(q *core.Policy) { q.TTL = math.MaxInt64 }), Start: abs, Events: []core.Event{reserve(t1, 1, fpA)}}},
		{"most durations a policy allows", stepCase{
			Policy: withPolicy(func(q *core.Policy) {
				q.LeaseDuration, q.InFlightWait, q.RetryAfter = math.MaxInt64, math.MaxInt64, math.MaxInt64
				q.ReconcileBackoffBase, q.ReconcileBackoffMax = math.MaxInt64, math.MaxInt64
				q.RequestBytesMax, q.ResponseBytesMax = math.MaxInt64, math.MaxInt64
			}),
			Start: abs,
			Events: []core.Event{reserve(t1, 1, fpA), reserve(t1, 2, fpA), owner(core.EventMarkUnknown, t1, 1),
				{Kind: core.EventResolve, Now: t1, Token: 1, Verdict: core.VerdictStillUnknown}},
		}},
		{"key bytes max at the i64 ends, refused", stepCase{Policy: withPolicy(func(q *core.Policy) { q.KeyBytesMax = math.MaxInt64 }), Start: abs, Events: []core.Event{reserve(t1, 1, fpA)}}},
		{"key bytes max least", stepCase{Policy: withPolicy(func(q *core.Policy) { q.KeyBytesMax = math.MinInt64 }), Start: abs, Events: []core.Event{reserve(t1, 1, fpA)}}},
		{"response bytes max least", stepCase{Policy: withPolicy(func(q *core.Policy) { q.ResponseBytesMax = math.MinInt64 }), Start: abs, Events: []core.Event{reserve(t1, 1, fpA)}}},
		{"u32 counters at their limit", stepCase{
			Policy: withPolicy(func(q *core.Policy) { q.ReconcileAttemptsMax = math.MaxUint32 }),
			Start:  func() core.Record { r := unknown; r.ReconcileAttempts = math.MaxUint32 - 2; return r }(),
			Events: []core.Event{
				{Kind: core.EventResolve, Now: t1, Token: 5, Verdict: core.VerdictStillUnknown, ErrorCode: "downstream_timeout"},
				{Kind: core.EventResolve, Now: t1.Add(time.Hour), Token: 5, Verdict: core.VerdictStillUnknown},
				{Kind: core.EventResolve, Now: t1.Add(2 * time.Hour), Token: 5, Verdict: core.VerdictStillUnknown},
				{Kind: core.EventResolve, Now: t1.Add(3 * time.Hour), Token: 5, Verdict: core.VerdictExecuted,
					Response: core.Response{StatusCode: 200, SchemaVersion: math.MaxUint32}},
			},
		}},
		{"status codes a 32-bit encoding would make valid", stepCase{Policy: p, Start: inProgress, Events: []core.Event{
			{Kind: core.EventComplete, Now: t1, Token: 1, Response: core.Response{StatusCode: 1<<32 + 201}},
			{Kind: core.EventComplete, Now: t1, Token: 1, Response: core.Response{StatusCode: -1<<32 + 200}},
			{Kind: core.EventComplete, Now: t1, Token: 1, Response: core.Response{StatusCode: math.MaxInt64}},
			{Kind: core.EventComplete, Now: t1, Token: 1, Response: core.Response{StatusCode: math.MinInt64}},
			{Kind: core.EventComplete, Now: t1, Token: 1, Response: core.Response{StatusCode: 599, SchemaVersion: math.MaxUint32}},
		}}},
		{"u8 enums at 255", stepCase{Policy: p, Start: abs, Events: []core.Event{
			{Kind: 255, Now: t1, Token: 1, Fingerprint: fpA},
			{Kind: core.EventResolve, Now: t1, Token: 1, Verdict: 255},
		}}},
		{"record status 255", stepCase{Policy: p, Start: core.Record{Scope: genScope, Status: 255, Fingerprint: fpA, Token: 1, Version: 1}, Events: []core.Event{reserve(t1, 2, fpA)}}},
		{"policy in-flight answer 255", stepCase{Policy: withPolicy(func(q *core.Policy) { q.InFlightAnswer = 255 }), Start: abs, Events: []core.Event{reserve(t1, 1, fpA)}}},
		{"policy expiry 255", stepCase{Policy: withPolicy(func(q *core.Policy) { q.Expiry = 255 }), Start: abs, Events: []core.Event{reserve(t1, 1, fpA)}}},
		{"policy fail 255", stepCase{Policy: withPolicy(func(q *core.Policy) { q.Fail = 255 }), Start: abs, Events: []core.Event{reserve(t1, 1, fpA)}}},
		{"error codes at their limit", stepCase{Policy: p, Start: inProgress, Events: []core.Event{
			{Kind: core.EventMarkUnknown, Now: t1, Token: 1, ErrorCode: core.ErrorCode(strings.Repeat("x", core.ErrorCodeBytesMax+1))},
			{Kind: core.EventMarkUnknown, Now: t1, Token: 1, ErrorCode: core.ErrorCode(strings.Repeat("x", core.ErrorCodeBytesMax))},
		}}},
		nilOrEmpty("headers: the event's empty over the record's nil", core.Response{}, core.Response{Headers: []core.Header{}}),
		nilOrEmpty("headers: the event's nil over the record's empty", core.Response{Headers: []core.Header{}}, core.Response{}),
		nilOrEmpty("body: the event's empty over the record's nil", core.Response{}, core.Response{Body: []byte{}}),
		nilOrEmpty("body: the event's nil over the record's empty", core.Response{Body: []byte{}}, core.Response{}),
		nilOrEmpty("both: the event's empty over the record's nil", core.Response{}, core.Response{Headers: []core.Header{}, Body: []byte{}}),
	}
	return out
}

// TestDifferentialExtremes: the wasm core answers as the native one on
// extremeCases, step by step, and the cases reach what they are about.
func TestDifferentialExtremes(t *testing.T) {
	h := testHost(t)
	for _, x := range extremeCases() {
		c := x.c
		if d := runCase(h.Step, &c); d != "" {
			t.Errorf("%s: %s", x.name, d)
		}
	}
	// Spot checks of what the cases reach, natively.
	for _, x := range extremeCases() {
		cur := x.c.Start
		var errs, oks int
		var maxToken core.Token
		for i := range x.c.Events {
			p, ev := x.c.Policy, x.c.Events[i]
			res, err := h.Step(&cur, &ev, &p)
			if err != nil {
				errs++
				continue
			}
			oks++
			maxToken = max(maxToken, res.Decision.Token, cur.Token)
		}
		switch {
		case strings.Contains(x.name, "refused") && errs == 0:
			t.Errorf("%s: no step was refused", x.name)
		case strings.HasPrefix(x.name, "times") && (oks < 5 || cur.Status != core.StatusAbsent):
			t.Errorf("%s: %d steps succeeded, record %s; want the whole lifecycle to a pruned record", x.name, oks, cur.Describe())
		case strings.HasPrefix(x.name, "tokens") && maxToken != math.MaxUint64:
			t.Errorf("%s: the largest token reached is %d", x.name, maxToken)
		case strings.HasPrefix(x.name, "status codes") && (errs != 4 || cur.Status != core.StatusCompleted):
			t.Errorf("%s: %d refusals and record %s, want 4 and completed", x.name, errs, cur.Describe())
		}
	}
}
