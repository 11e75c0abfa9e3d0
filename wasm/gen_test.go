package wasmcore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/wasm/internal/abi"
)

// stepCase is a policy, a starting record and events to apply in order, each
// to the record the previous one left.
type stepCase struct {
	Policy core.Policy
	Start  core.Record
	Events []core.Event
}

// genOptions shape the cases: the differential tests want every kind of
// input, the Node fixture wants them small and reproducible.
type genOptions struct {
	bodyBytesMax int  // the largest response body drawn
	locations    bool // draw event times in other locations than UTC
	// kind200 draws event kind 200 too, which the core refuses as unknown
	// and which the perturbed guest turns into a trap (perturb_test.go).
	kind200 bool
}

var (
	genT0     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	genScope  = core.Scope{Tenant: "acme", Principal: "user-1", UseCase: "payments.create", Key: "550e8400-e29b-41d4-a716-446655440000"}
	genFPs    = []core.Fingerprint{{}, sha256.Sum256([]byte("A")), sha256.Sum256([]byte("B"))}
	genZoneNY = time.FixedZone("UTC-5", -5*3600)
)

// genDuration draws a duration around the scale of a lease, with the values
// at which comparisons turn (0, 1ns) and invalid ones (negative).
func genDuration(t *rapid.T, name string) time.Duration {
	return rapid.SampledFrom([]time.Duration{
		-time.Second, 0, 1, time.Millisecond, time.Second, 3 * time.Second, time.Minute, 5 * time.Minute,
		time.Hour, 24 * time.Hour, core.TTLMax, core.TTLMax + 1,
	}).Draw(t, name)
}

// genPolicy is usually a valid policy with drawn durations and modes, and
// sometimes one value out of range, so that every ErrInvalidPolicy message
// is compared too.
func genPolicy(t *rapid.T) core.Policy {
	p := core.PolicyDefault()
	p.LeaseDuration = rapid.SampledFrom([]time.Duration{time.Second, 5 * time.Second, time.Minute, 5 * time.Minute}).Draw(t, "lease")
	p.TTL = rapid.SampledFrom([]time.Duration{10 * time.Second, time.Minute, time.Hour, 24 * time.Hour}).Draw(t, "ttl")
	p.RetryAfter = rapid.SampledFrom([]time.Duration{time.Millisecond, time.Second, 3 * time.Second}).Draw(t, "retry_after")
	p.Expiry = core.ExpiryMode(rapid.IntRange(0, 1).Draw(t, "expiry"))
	p.Fail = core.FailMode(rapid.IntRange(0, 1).Draw(t, "fail"))
	p.InFlightAnswer = core.InFlightAnswer(rapid.IntRange(0, 1).Draw(t, "in_flight_answer"))
	p.ReconcileBackoffBase = rapid.SampledFrom([]time.Duration{time.Millisecond, time.Second}).Draw(t, "backoff_base")
	p.ReconcileBackoffMax = p.ReconcileBackoffBase * time.Duration(rapid.SampledFrom([]int{1, 3, 1000}).Draw(t, "backoff_cap_factor"))
	p.ReconcileAttemptsMax = uint32(rapid.IntRange(1, 5).Draw(t, "attempts_max"))
	p.ResponseBytesMax = rapid.SampledFrom([]int{16, 1024, 1 << 20}).Draw(t, "response_bytes_max")
	p.TombstoneRetention = rapid.SampledFrom([]time.Duration{time.Second, time.Hour, core.TTLMax}).Draw(t, "tombstone_retention")
	switch rapid.IntRange(0, 19).Draw(t, "invalid_policy_field") {
	case 0:
		p.LeaseDuration = genDuration(t, "bad_lease")
	case 1:
		p.TTL = genDuration(t, "bad_ttl")
	case 2:
		p.InFlightWait = -genDuration(t, "bad_in_flight_wait")
	case 3:
		p.InFlightAnswer = core.InFlightAnswer(rapid.IntRange(0, 255).Draw(t, "bad_in_flight_answer"))
	case 4:
		p.Expiry = core.ExpiryMode(rapid.IntRange(0, 255).Draw(t, "bad_expiry"))
	case 5:
		p.Fail = core.FailMode(rapid.IntRange(0, 255).Draw(t, "bad_fail"))
	case 6:
		p.ReconcileBackoffMax = genDuration(t, "bad_backoff_cap")
	case 7:
		p.ReconcileAttemptsMax = 0
	case 8:
		p.KeyBytesMax = rapid.IntRange(-1, 300).Draw(t, "bad_key_bytes_max")
	case 9:
		p.RetryAfter = genDuration(t, "bad_retry_after")
	case 10:
		p.ResponseBytesMax = rapid.IntRange(-1, 0).Draw(t, "bad_response_bytes_max")
	case 11:
		p.ReconcileBackoffBase = genDuration(t, "bad_backoff_base")
	case 12:
		p.TombstoneRetention = genDuration(t, "bad_tombstone_retention")
	}
	return p
}

// genU64 draws a value of 0..max of any magnitude: its bit length is drawn
// first, as often long as short (rapid alone favours small values), so that
// values past 2^32 and past 2^63 are as common as small ones, and a host
// that keeps fewer than 64 bits of a token or a version is seen by every
// differential test, not only by the extreme cases.
func genU64(t *rapid.T, name string, max uint64) uint64 {
	bits := rapid.IntRange(0, 64).Draw(t, name+"_bits")
	if rapid.Bool().Draw(t, name+"_long") {
		bits = 64 - bits
	}
	lo, hi := uint64(0), uint64(math.MaxUint64)
	if bits < 64 {
		hi = 1<<bits - 1
	}
	if bits > 0 {
		lo = 1 << (bits - 1)
	}
	return rapid.Uint64Range(min(lo, max), min(hi, max)).Draw(t, name)
}

// genTokenBase draws where a case's tokens start, with room above it for
// the case's fresh tokens.
func genTokenBase(t *rapid.T) core.Token {
	return core.Token(genU64(t, "token_base", math.MaxUint64-64))
}

// genStart is usually the absent record of genScope, and sometimes a record
// of any status, valid or not, with any times, its token at or just above
// base and any version.
func genStart(t *rapid.T, o genOptions, base core.Token) core.Record {
	r := core.Record{Scope: genScope}
	if rapid.IntRange(0, 3).Draw(t, "start_absent") != 0 {
		return r
	}
	r.Status = core.Status(rapid.IntRange(0, 7).Draw(t, "start_status"))
	r.Fingerprint = rapid.SampledFrom(genFPs).Draw(t, "start_fp")
	r.Token = base + core.Token(rapid.IntRange(0, 3).Draw(t, "start_token"))
	r.Version = genU64(t, "start_version", math.MaxUint64)
	r.LastErrorCode = rapid.SampledFrom([]core.ErrorCode{"", core.ErrorCodeLeaseExpired, "gateway_timeout"}).Draw(t, "start_error")
	if r.Status == core.StatusCompleted || rapid.Bool().Draw(t, "start_response") {
		r.Response = genResponse(t, o, "start_")
	}
	times := []*time.Time{&r.LockedUntil, &r.ReconcileAfter, &r.CreatedAt, &r.CompletedAt, &r.ExpiresAt}
	for i, f := range times {
		if rapid.Bool().Draw(t, fmt.Sprintf("start_time_%d_set", i)) {
			*f = genT0.Add(time.Duration(rapid.IntRange(-2, 120).Draw(t, fmt.Sprintf("start_time_%d_s", i))) * time.Second)
		}
	}
	r.ReconcileAttempts = uint32(rapid.IntRange(0, 6).Draw(t, "start_attempts"))
	return r
}

// genResponse draws a response that the core stores, or refuses for each of
// its reasons: status, a body with 204/304, header bytes, size.
func genResponse(t *rapid.T, o genOptions, prefix string) core.Response {
	r := core.Response{
		StatusCode:    rapid.SampledFrom([]int{201, 200, 402, 500, 599, 204, 304, 0, 99, 199, 600, -1}).Draw(t, prefix+"status"),
		SchemaVersion: uint32(rapid.IntRange(0, 2).Draw(t, prefix+"schema")),
	}
	switch rapid.IntRange(0, 4).Draw(t, prefix+"headers") {
	case 0: // nil
	case 1:
		r.Headers = []core.Header{}
	default:
		n := rapid.IntRange(1, 3).Draw(t, prefix+"header_count")
		for i := 0; i < n; i++ {
			r.Headers = append(r.Headers, core.Header{
				Name:  rapid.SampledFrom([]string{"Content-Type", "X-Trace", "", "Bad Name", "É", "x!#$%&'*+-.^_`|~"}).Draw(t, prefix+"header_name"),
				Value: rapid.SampledFrom([]string{"application/json", "", "a\tb", "a\r\nX-Injected: 1", "nul\x00", "del\x7f", "é"}).Draw(t, prefix+"header_value"),
			})
		}
	}
	switch rapid.IntRange(0, 5).Draw(t, prefix+"body_kind") {
	case 0: // nil
	case 1:
		r.Body = []byte{}
	case 2:
		r.Body = []byte(`{"paymentId":"p-1"}`)
	case 3:
		r.Body = []byte{0, 0xff, '"', '\\', 0x80}
	default:
		// Large: up to the option's bound, against limits of 16 B, 1 KiB, 1 MiB.
		n := rapid.IntRange(0, o.bodyBytesMax).Draw(t, prefix+"body_bytes")
		r.Body = bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
	}
	return r
}

// genCase draws a case: a policy, a start and a sequence of events of every
// kind, at times that step forward across leases, TTLs and backoffs, land
// exactly on them, sometimes step back, and sometimes are missing.
func genCase(o genOptions) *rapid.Generator[stepCase] {
	return rapid.Custom(func(t *rapid.T) stepCase {
		base := genTokenBase(t)
		c := stepCase{Policy: genPolicy(t), Start: genStart(t, o, base)}
		now := genT0
		lastToken := base + 3
		n := rapid.IntRange(1, 24).Draw(t, "events")
		for i := 0; i < n; i++ {
			kinds := []int{1, 1, 1, 2, 2, 3, 4, 5, 6, 6, 7, 7, 0, 8}
			if o.kind200 {
				kinds = append(kinds, 200)
			}
			ev := core.Event{Kind: core.EventKind(rapid.SampledFrom(kinds).Draw(t, "kind"))}
			step := rapid.SampledFrom([]time.Duration{0, 1, time.Millisecond, time.Second, c.Policy.LeaseDuration, c.Policy.LeaseDuration - 1,
				c.Policy.TTL, c.Policy.RetryAfter, c.Policy.ReconcileBackoffBase, -time.Second}).Draw(t, "time_step")
			now = now.Add(step)
			switch rapid.IntRange(0, 19).Draw(t, "now_kind") {
			case 0:
				ev.Now = time.Time{} // refused: time missing
			case 1, 2:
				if o.locations {
					ev.Now = now.In(genZoneNY)
				} else {
					ev.Now = now
				}
			case 3:
				if o.locations {
					ev.Now = now.Local()
				} else {
					ev.Now = now
				}
			default:
				ev.Now = now
			}
			ev.Fingerprint = genFPs[rapid.SampledFrom([]int{1, 1, 1, 2, 0}).Draw(t, "fp")]
			switch rapid.IntRange(0, 5).Draw(t, "token_kind") {
			case 0, 1:
				lastToken++
				ev.Token = lastToken // fresh
			case 2, 3:
				ev.Token = lastToken // the latest: usually the owner
			case 4:
				ev.Token = core.Token(rapid.Uint64Range(uint64(base), uint64(lastToken)).Draw(t, "old_token"))
			case 5:
				ev.Token = 0
			}
			if ev.Kind == core.EventComplete || ev.Kind == core.EventResolve || rapid.IntRange(0, 9).Draw(t, "stray_response") == 0 {
				ev.Response = genResponse(t, o, "")
			}
			ev.ErrorCode = rapid.SampledFrom([]core.ErrorCode{"", "", "gateway_timeout", "declined"}).Draw(t, "code")
			ev.Verdict = core.Verdict(rapid.SampledFrom([]int{1, 2, 3, 3, 0, 9}).Draw(t, "verdict"))
			c.Events = append(c.Events, ev)
		}
		return c
	})
}

// stepper is core.Step's signature: the native core and Host.Step both are.
type stepper func(*core.Record, *core.Event, *core.Policy) (core.Transition, error)

// compareStep steps a copy of cur with each of native and wasm and reports
// how they differ, or "". It returns the native record after the step.
func compareStep(native, wasm stepper, cur *core.Record, ev *core.Event, p *core.Policy) (core.Record, string) {
	recN, recW := *cur, *cur
	evN, evW := *ev, *ev
	pN, pW := *p, *p
	resN, errN := native(&recN, &evN, &pN)
	resW, errW := wasm(&recW, &evW, &pW)
	var diffs []string
	if resN != resW {
		diffs = append(diffs, fmt.Sprintf("result: native %+v, wasm %+v", resN, resW))
	}
	if !reflect.DeepEqual(recN, recW) {
		diffs = append(diffs, fmt.Sprintf("record:\n  native %s\n  wasm   %s\n  (native %#v)\n  (wasm   %#v)", recN.Describe(), recW.Describe(), recN, recW))
	}
	if d := compareErrors(errN, errW); d != "" {
		diffs = append(diffs, d)
	}
	if !reflect.DeepEqual(evN, *ev) || !reflect.DeepEqual(evW, *ev) || pN != *p || pW != *p {
		diffs = append(diffs, "the event or the policy was modified")
	}
	return recN, strings.Join(diffs, "\n")
}

// compareErrors reports how two errors of Step differ: in presence, in
// message, or in the core sentinel they match with errors.Is.
func compareErrors(native, wasm error) string {
	switch {
	case native == nil && wasm == nil:
		return ""
	case native == nil || wasm == nil:
		return fmt.Sprintf("error: native %v, wasm %v", native, wasm)
	case native.Error() != wasm.Error():
		return fmt.Sprintf("error message: native %q, wasm %q", native, wasm)
	case core.Refused(native) != core.Refused(wasm):
		return fmt.Sprintf("core.Refused: native %v, wasm %v", core.Refused(native), core.Refused(wasm))
	}
	for _, s := range abi.Sentinels {
		if errors.Is(native, s) != errors.Is(wasm, s) {
			return fmt.Sprintf("errors.Is(_, %v): native %v, wasm %v", s, errors.Is(native, s), errors.Is(wasm, s))
		}
	}
	return ""
}

// runCase steps c natively and through wasm and returns the first
// difference, naming the event, or "".
func runCase(wasm stepper, c *stepCase) string {
	cur := c.Start
	for i := range c.Events {
		next, d := compareStep(core.Step, wasm, &cur, &c.Events[i], &c.Policy)
		if d != "" {
			return fmt.Sprintf("event %d (%v) on %s:\n%s", i, c.Events[i].Kind, cur.Describe(), d)
		}
		cur = next
	}
	return ""
}
