package linearizability

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// The history format for drivers in any language (HISTORY.md): JSON Lines,
// one store call per line, so that a store written in JavaScript, Python or
// Java is checked by the same models as a Go one (cmd/lincheck). A line's
// "type" is "policy" (the policy lifecycle lines were applied under, once,
// before them), "store" (a StoreOperation) or "lifecycle" (a
// LifecycleOperation). 64-bit integers are decimal strings, times Unix
// nanoseconds as decimal strings (null: no time), fingerprints hex, bodies
// base64 (null: none), headers null or a list.

// History is what ReadHistory read.
type History struct {
	Policy    *core.Policy // the policy line's, or nil
	Store     []StoreOperation
	Lifecycle []LifecycleOperation
}

type (
	jsonLine struct {
		Type          string          `json:"type"`
		Policy        *jsonPolicy     `json:"policy,omitempty"`
		Client        int             `json:"client"`
		Call          string          `json:"call,omitempty"`
		Return        string          `json:"return,omitempty"`
		Ended         string          `json:"ended,omitempty"`
		Scope         *jsonScope      `json:"scope,omitempty"`
		Method        string          `json:"method,omitempty"`
		Record        *jsonRecord     `json:"record,omitempty"`
		ExpectVersion string          `json:"expectVersion,omitempty"`
		ExpectToken   string          `json:"expectToken,omitempty"`
		FreshToken    string          `json:"freshToken,omitempty"`
		Event         *jsonEvent      `json:"event,omitempty"`
		Before        string          `json:"before,omitempty"`
		Transition    *jsonTransition `json:"transition,omitempty"`
		WriteKnown    bool            `json:"writeKnown,omitempty"`
	}
	jsonScope struct {
		Tenant    string `json:"tenant"`
		Principal string `json:"principal"`
		UseCase   string `json:"useCase"`
		Key       string `json:"key"`
	}
	jsonRecord struct {
		Scope             jsonScope    `json:"scope"`
		Status            string       `json:"status"`
		Fingerprint       string       `json:"fingerprint"`
		Token             string       `json:"token"`
		Version           string       `json:"version"`
		Response          jsonResponse `json:"response"`
		LastErrorCode     string       `json:"lastErrorCode"`
		LockedUntil       *string      `json:"lockedUntil"`
		ReconcileAfter    *string      `json:"reconcileAfter"`
		ReconcileAttempts uint32       `json:"reconcileAttempts"`
		CreatedAt         *string      `json:"createdAt"`
		CompletedAt       *string      `json:"completedAt"`
		ExpiresAt         *string      `json:"expiresAt"`
	}
	jsonResponse struct {
		StatusCode    int           `json:"statusCode"`
		Headers       *[]jsonHeader `json:"headers"`
		Body          *string       `json:"body"`
		SchemaVersion uint32        `json:"schemaVersion"`
	}
	jsonHeader struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	jsonEvent struct {
		Kind        string       `json:"kind"`
		Now         *string      `json:"now"`
		Fingerprint string       `json:"fingerprint"`
		Token       string       `json:"token"`
		Response    jsonResponse `json:"response"`
		ErrorCode   string       `json:"errorCode"`
		Verdict     string       `json:"verdict"`
	}
	jsonTransition struct {
		Decision      string `json:"decision"`
		DecisionToken string `json:"decisionToken"`
		RetryAfter    string `json:"retryAfter"`
		Write         string `json:"write"`
		ExpectVersion string `json:"expectVersion"`
		ExpectToken   string `json:"expectToken"`
	}
	jsonPolicy struct {
		LeaseDuration        string `json:"leaseDuration"`
		TTL                  string `json:"ttl"`
		InFlightWait         string `json:"inFlightWait"`
		InFlightAnswer       uint8  `json:"inFlightAnswer"`
		RetryAfter           string `json:"retryAfter"`
		Expiry               uint8  `json:"expiry"`
		Fail                 uint8  `json:"fail"`
		ReconcileBackoffBase string `json:"reconcileBackoffBase"`
		ReconcileBackoffMax  string `json:"reconcileBackoffMax"`
		ReconcileAttemptsMax uint32 `json:"reconcileAttemptsMax"`
		TombstoneRetention   string `json:"tombstoneRetention"`
		KeyBytesMax          int    `json:"keyBytesMax"`
		RequestBytesMax      int    `json:"requestBytesMax"`
		ResponseBytesMax     int    `json:"responseBytesMax"`
	}
)

// ReadHistory reads a history in the JSON Lines format. A line it cannot
// read is an error naming the line; a history with lifecycle lines and no
// policy line is one too.
func ReadHistory(r io.Reader) (History, error) {
	var h History
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l jsonLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return History{}, fmt.Errorf("line %d: %w", n, err)
		}
		if err := h.add(&l); err != nil {
			return History{}, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return History{}, err
	}
	if len(h.Lifecycle) > 0 && h.Policy == nil {
		return History{}, errors.New("lifecycle lines without a policy line")
	}
	return h, nil
}

func (h *History) add(l *jsonLine) error {
	var d decoder
	switch l.Type {
	case "policy":
		if l.Policy == nil {
			return errors.New("a policy line without its policy")
		}
		p := d.policy(l.Policy)
		h.Policy = &p
	case "store":
		op := StoreOperation{Client: l.Client, Call: d.i64(l.Call), Return: d.i64(l.Return), Ended: d.ending(l.Ended),
			Kind: d.method(l.Method), Scope: d.scope(l.Scope), ExpectVersion: d.u64opt(l.ExpectVersion),
			ExpectToken: core.Token(d.u64opt(l.ExpectToken)), FreshToken: core.Token(d.u64opt(l.FreshToken))}
		if l.Record != nil {
			op.Record = d.record(l.Record)
		}
		h.Store = append(h.Store, op)
	case "lifecycle":
		op := LifecycleOperation{Client: l.Client, Call: d.i64(l.Call), Return: d.i64(l.Return), Ended: d.ending(l.Ended),
			Scope: d.scope(l.Scope), WriteKnown: l.WriteKnown}
		if l.Event == nil {
			return errors.New("a lifecycle line without its event")
		}
		op.Event = d.event(l.Event)
		if l.Before != "" {
			op.Before = d.status(l.Before)
		}
		if l.Transition != nil {
			op.Transition = d.transition(l.Transition)
		}
		if l.Record != nil {
			op.Record = d.record(l.Record)
		}
		h.Lifecycle = append(h.Lifecycle, op)
	default:
		return fmt.Errorf("type %q: want policy, store or lifecycle", l.Type)
	}
	return d.err
}

// decoder reads a line's values; the first error sticks, and later reads
// return zero values.
type decoder struct{ err error }

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) i64(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		d.fail("%q: want a decimal i64", s)
	}
	return v
}

func (d *decoder) u64(s string) uint64 {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		d.fail("%q: want a decimal u64", s)
	}
	return v
}

func (d *decoder) u64opt(s string) uint64 {
	if s == "" {
		return 0
	}
	return d.u64(s)
}

func (d *decoder) duration(s string) time.Duration { return time.Duration(d.i64(s)) }

// time reads Unix nanoseconds, of any magnitude an i64 of seconds holds.
func (d *decoder) time(s *string) time.Time {
	if s == nil {
		return time.Time{}
	}
	n, ok := new(big.Int).SetString(*s, 10)
	if !ok {
		d.fail("%q: want Unix nanoseconds", *s)
		return time.Time{}
	}
	sec, nsec := new(big.Int).DivMod(n, big.NewInt(1e9), new(big.Int))
	if !sec.IsInt64() {
		d.fail("%q: seconds out of range", *s)
		return time.Time{}
	}
	return time.Unix(sec.Int64(), nsec.Int64()).UTC()
}

func (d *decoder) scope(s *jsonScope) core.Scope {
	if s == nil {
		d.fail("no scope")
		return core.Scope{}
	}
	return core.Scope{Tenant: s.Tenant, Principal: s.Principal, UseCase: s.UseCase, Key: s.Key}
}

func (d *decoder) fingerprint(s string) core.Fingerprint {
	var f core.Fingerprint
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(f) {
		d.fail("fingerprint %q: want 64 hex digits", s)
	}
	copy(f[:], b)
	return f
}

func (d *decoder) response(r *jsonResponse) core.Response {
	out := core.Response{StatusCode: r.StatusCode, SchemaVersion: r.SchemaVersion}
	if r.Headers != nil {
		out.Headers = make([]core.Header, len(*r.Headers))
		for i, h := range *r.Headers {
			out.Headers[i] = core.Header{Name: h.Name, Value: h.Value}
		}
	}
	if r.Body != nil {
		b, err := base64.StdEncoding.DecodeString(*r.Body)
		if err != nil {
			d.fail("body: %v", err)
		}
		out.Body = b
	}
	return out
}

func (d *decoder) record(r *jsonRecord) core.Record {
	return core.Record{
		Scope: d.scope(&r.Scope), Status: d.status(r.Status), Fingerprint: d.fingerprint(r.Fingerprint),
		Token: core.Token(d.u64(r.Token)), Version: d.u64(r.Version), Response: d.response(&r.Response),
		LastErrorCode: core.ErrorCode(r.LastErrorCode), LockedUntil: d.time(r.LockedUntil), ReconcileAfter: d.time(r.ReconcileAfter),
		ReconcileAttempts: r.ReconcileAttempts, CreatedAt: d.time(r.CreatedAt), CompletedAt: d.time(r.CompletedAt), ExpiresAt: d.time(r.ExpiresAt),
	}
}

func (d *decoder) event(e *jsonEvent) core.Event {
	return core.Event{
		Kind: d.eventKind(e.Kind), Now: d.time(e.Now), Fingerprint: d.fingerprint(e.Fingerprint), Token: core.Token(d.u64(e.Token)),
		Response: d.response(&e.Response), ErrorCode: core.ErrorCode(e.ErrorCode), Verdict: d.verdict(e.Verdict),
	}
}

func (d *decoder) transition(t *jsonTransition) core.Transition {
	var tr core.Transition
	tr.Decision.Kind = d.decision(t.Decision)
	tr.Decision.Token = core.Token(d.u64(t.DecisionToken))
	tr.Decision.RetryAfter = d.duration(t.RetryAfter)
	tr.Write.Kind = d.writeKind(t.Write)
	tr.Write.ExpectVersion = d.u64(t.ExpectVersion)
	tr.Write.ExpectToken = core.Token(d.u64(t.ExpectToken))
	return tr
}

func (d *decoder) policy(p *jsonPolicy) core.Policy {
	return core.Policy{
		LeaseDuration: d.duration(p.LeaseDuration), TTL: d.duration(p.TTL), InFlightWait: d.duration(p.InFlightWait),
		InFlightAnswer: core.InFlightAnswer(p.InFlightAnswer), RetryAfter: d.duration(p.RetryAfter),
		Expiry: core.ExpiryMode(p.Expiry), Fail: core.FailMode(p.Fail),
		ReconcileBackoffBase: d.duration(p.ReconcileBackoffBase), ReconcileBackoffMax: d.duration(p.ReconcileBackoffMax),
		ReconcileAttemptsMax: p.ReconcileAttemptsMax, TombstoneRetention: d.duration(p.TombstoneRetention),
		KeyBytesMax: p.KeyBytesMax, RequestBytesMax: p.RequestBytesMax, ResponseBytesMax: p.ResponseBytesMax,
	}
}

// The enums are written by their names (core's String), read back by
// looking the name up among the values.
func (d *decoder) status(s string) core.Status {
	return lookup(d, "status", s, func(i int) string { return core.Status(i).String() }, func(i int) core.Status { return core.Status(i) })
}

func (d *decoder) eventKind(s string) core.EventKind {
	return lookup(d, "event kind", s, func(i int) string { return core.EventKind(i).String() }, func(i int) core.EventKind { return core.EventKind(i) })
}

func (d *decoder) verdict(s string) core.Verdict {
	if s == "" {
		return 0
	}
	return lookup(d, "verdict", s, func(i int) string { return core.Verdict(i).String() }, func(i int) core.Verdict { return core.Verdict(i) })
}

func (d *decoder) decision(s string) core.DecisionKind {
	return lookup(d, "decision", s, func(i int) string { return core.DecisionKind(i).String() }, func(i int) core.DecisionKind { return core.DecisionKind(i) })
}

func (d *decoder) writeKind(s string) core.WriteKind {
	return lookup(d, "write", s, func(i int) string { return core.WriteKind(i).String() }, func(i int) core.WriteKind { return core.WriteKind(i) })
}

func (d *decoder) method(s string) store.Method {
	return lookup(d, "method", s, func(i int) string { return store.Method(i).String() }, func(i int) store.Method { return store.Method(i) })
}

func (d *decoder) ending(s string) Ending {
	return lookup(d, "ended", s, func(i int) string { return Ending(i).String() }, func(i int) Ending { return Ending(i) })
}

// lookup finds the value in 0..255 whose name is s.
func lookup[T any](d *decoder, what, s string, name func(int) string, of func(int) T) T {
	for i := 0; i < 256; i++ {
		if name(i) == s {
			return of(i)
		}
	}
	d.fail("%s %q: no such name", what, s)
	var zero T
	return zero
}
