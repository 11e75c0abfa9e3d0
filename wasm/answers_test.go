package wasmcore

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/scenario"
	"github.com/idemkit/idem/wasm/internal/abi"
)

// The answers fixture holds both hosts' answer decoders to one reference,
// abi.ApplyAnswer, over answers the real guest never gives (an explicit
// response, every change bit, 64-bit extremes, times far from the epoch,
// every error code) and malformed ones (every truncation, trailing bytes,
// unknown tags and bits). The fake guest's fakeEcho hands each answer to a
// host as the guest's answer. TestAnswers checks the Go host here and
// writes js/testdata/answers.json for host.test.mjs, which checks the
// Node host; a change of ApplyAnswer's behaviour makes the file stale.

const answersPath = "js/testdata/answers.json"

type (
	answersFixture struct {
		Comment string `json:"comment"`
		// Commands are the fake guest's (fakeguest_test.go): a request's
		// policy lease; each case is answered by "echo".
		Commands map[string]int `json:"commands"`
		// FakeBadInputSize is the request size for which the fake guest's
		// idem_input answers an address outside its memory.
		FakeBadInputSize int                 `json:"fakeBadInputSize"`
		Cases            []answerFixtureCase `json:"cases"`
	}
	answerFixtureCase struct {
		Name       string             `json:"name"`
		Record     fixtureRecord      `json:"record"` // its response body is the answer
		Event      fixtureEvent       `json:"event"`
		Transition *fixtureTransition `json:"transition"`
		Error      *fixtureError      `json:"error"`
		Malformed  bool               `json:"malformed"`
		After      *fixtureRecord     `json:"after"` // nil for an error: the record is unchanged
	}
)

type answerCase struct {
	name   string
	answer []byte
	ev     core.Event
}

func le64(b []byte, v uint64) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
}
func le32(b []byte, v uint32) []byte  { return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24)) }
func leStr(b []byte, s string) []byte { return append(le32(b, uint32(len(s))), s...) }

// okHead is an OK answer's result (decision execute, token 1) and mask.
func okHead(mask uint32) []byte {
	b := []byte{abi.AnswerOK, 1}
	b = le64(le64(b, 1), 0)
	b = append(b, 0)
	return le32(le64(le64(b, 0), 0), mask)
}

var answerZone = time.FixedZone("UTC+9", 9*3600)

func answerCases() []answerCase {
	evResp := core.Response{StatusCode: 201, Headers: []core.Header{}, Body: []byte{}, SchemaVersion: 1}
	ev := core.Event{Kind: core.EventComplete, Now: time.Date(2026, 1, 1, 0, 0, 0, 0, answerZone), Token: 1, Response: evResp}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	before := core.Record{
		Scope: scenario.Scope, Status: core.StatusInProgress, Fingerprint: core.Fingerprint{1}, Token: 1, Version: 1,
		Response: core.Response{StatusCode: 200, Body: []byte("old")}, LastErrorCode: "x",
		LockedUntil: t0, ReconcileAfter: t0, ReconcileAttempts: 1, CreatedAt: t0, CompletedAt: t0, ExpiresAt: t0,
	}
	ok := func(res core.Transition, after core.Record) []byte {
		return abi.AppendOK(nil, &res, &before, &after, &ev)
	}

	every := core.Record{
		Scope: core.Scope{Tenant: "tenant-é", Principal: "p", UseCase: "u", Key: "k"}, Status: core.StatusExpired,
		Fingerprint: core.Fingerprint{0xfe, 0xfe, 31: 0xff}, Token: math.MaxUint64, Version: math.MaxUint64 - 1,
		Response:          core.Response{StatusCode: -1, Headers: []core.Header{}, SchemaVersion: math.MaxUint32},
		LastErrorCode:     core.ErrorCodeLeaseExpired,
		LockedUntil:       time.Unix(-1, 500_000_000).UTC(),             // before 1970, with nanoseconds
		ReconcileAfter:    time.Unix(1<<40, 999_999_999).In(abi.NowLoc), // past the int64 nanoseconds, from now
		ReconcileAttempts: math.MaxUint32,
		CreatedAt:         time.Time{},                                 // cleared
		CompletedAt:       time.Unix(math.MinInt64, 0).UTC(),           // the least i64 seconds
		ExpiresAt:         time.Unix(math.MaxInt64, 999_999_999).UTC(), // the most
	}
	everyRes := core.Transition{
		Decision: core.Decision{Kind: core.DecisionPruned, Token: math.MaxUint64, RetryAfter: math.MinInt64},
		Write:    core.Write{Kind: core.WriteDelete, ExpectVersion: math.MaxUint64, ExpectToken: math.MaxUint64 - 1},
	}
	everyAnswer := ok(everyRes, every)

	respOnly := func(r core.Response) core.Record { a := before; a.Response = r; return a }
	fromNow := before
	for i, f := range []*time.Time{&fromNow.LockedUntil, &fromNow.ReconcileAfter, &fromNow.CreatedAt, &fromNow.CompletedAt, &fromNow.ExpiresAt} {
		*f = t0.Add(time.Duration(i+1) * time.Second).In(abi.NowLoc)
	}
	maxRes := core.Transition{Decision: core.Decision{Kind: core.DecisionInFlight, RetryAfter: math.MaxInt64}, Write: core.Write{Kind: core.WriteUpdate, ExpectVersion: 1, ExpectToken: 1}}
	// An event whose response has a header and a body: one the host shares
	// can be told from a copy.
	paid := ev
	paid.Response = core.Response{StatusCode: 201, Headers: []core.Header{{Name: "X-A", Value: "b"}}, Body: []byte("paid"), SchemaVersion: 1}
	paidAnswer := abi.AppendOK(nil, &maxRes, &before, ptr(respOnly(paid.Response)), &paid)

	cases := []answerCase{
		{"ok: every field changed, extremes", everyAnswer, ev},
		{"ok: explicit response, nil headers, empty body", ok(maxRes, respOnly(core.Response{StatusCode: 201, Body: []byte{}, SchemaVersion: 1})), ev},
		{"ok: explicit response, headers and body", ok(maxRes, respOnly(core.Response{StatusCode: 200,
			Headers: []core.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "X-A", Value: "é"}, {Name: "X-Empty", Value: ""}},
			Body:    []byte{0, 0xff, '"', 0x80}, SchemaVersion: 7})), ev},
		{"ok: the event's response, empty headers and body", ok(maxRes, respOnly(ev.Response)), ev},
		{"ok: the event's response, a header and a body", paidAnswer, paid},
		{"ok: response cleared", ok(maxRes, respOnly(core.Response{})), ev},
		{"ok: times from now, in now's location", ok(maxRes, fromNow), ev},
		{"ok: nothing changed", ok(maxRes, before), ev},
	}
	for _, code := range []uint8{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 200, abi.SentinelMalformedRequest, abi.SentinelUnidentified} {
		msg := fmt.Sprintf("idem: refused with code %d, é", code)
		cases = append(cases, answerCase{fmt.Sprintf("refused: code %d", code), leStr([]byte{abi.AnswerRefused, code}, msg), ev})
	}
	cases = append(cases, answerCase{"refused: empty message", leStr([]byte{abi.AnswerRefused, 7}, ""), ev})

	refused := leStr([]byte{abi.AnswerRefused, 7}, "idem: a message")
	for n := 0; n < len(everyAnswer); n++ {
		cases = append(cases, answerCase{fmt.Sprintf("malformed: OK truncated to %d bytes", n), everyAnswer[:n], ev})
	}
	for n := 1; n < len(refused); n++ {
		cases = append(cases, answerCase{fmt.Sprintf("malformed: refusal truncated to %d bytes", n), refused[:n], ev})
	}
	nanos := func(tag byte, ns uint32) []byte {
		return le32(le64(append(okHead(abi.ChangedLockedUntil), tag), 0), ns)
	}
	cases = append(cases,
		answerCase{"malformed: OK with a trailing byte", append(bytes.Clone(everyAnswer), 0), ev},
		answerCase{"malformed: refusal with a trailing byte", append(bytes.Clone(refused), 0), ev},
		answerCase{"malformed: status 2", append([]byte{2}, okHead(0)[1:]...), ev},
		answerCase{"malformed: status 255", []byte{255}, ev},
		answerCase{"malformed: change bit 13", okHead(1 << 13), ev},
		answerCase{"malformed: change bit 31", okHead(1 << 31), ev},
		answerCase{"malformed: response tag 3", append(okHead(abi.ChangedResponse), 3), ev},
		answerCase{"malformed: time tag 3", append(okHead(abi.ChangedLockedUntil), 3), ev},
		answerCase{"malformed: instant with 10^9 nanoseconds", nanos(abi.TimeInstant, 1e9), ev},
		answerCase{"malformed: from-now instant with 10^9 nanoseconds", nanos(abi.TimeFromNow, 1e9), ev},
		answerCase{"ok: instant with 10^9-1 nanoseconds", nanos(abi.TimeInstant, 1e9-1), ev},
		answerCase{"malformed: headers count past the end", le32(le32(le64(append(okHead(abi.ChangedResponse), abi.ResponseExplicit), 200), 0), 1000), ev},
		answerCase{"malformed: body length past the end", le32(le32(le32(le64(append(okHead(abi.ChangedResponse), abi.ResponseExplicit), 200), 0), 0xFFFFFFFF), 1000), ev},
		answerCase{"malformed: string length past the end", le32(okHead(abi.ChangedLastErrorCode), 5), ev},
	)
	return cases
}

// echoRecord is the record whose request makes fakeEcho answer answer: an
// empty scope and nil headers put its body at fakeEchoOffset. Its other
// fields are set, to show that the fields an answer leaves alone stay.
func echoRecord(answer []byte) core.Record {
	t := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	return core.Record{
		Status: core.StatusCompleted, Fingerprint: core.Fingerprint{9}, Token: 7, Version: 8,
		Response:      core.Response{StatusCode: 299, Body: answer, SchemaVersion: 3},
		LastErrorCode: "kept", LockedUntil: t, ReconcileAfter: t.Add(1), ReconcileAttempts: 4,
		CreatedAt: t.Add(2), CompletedAt: t.Add(3), ExpiresAt: t.Add(4),
	}
}

func ptr[T any](v T) *T { return &v }

func codeName(code uint8) string {
	switch {
	case int(code) < len(sentinelNames):
		return sentinelNames[code]
	case code == abi.SentinelMalformedRequest:
		return "ErrMalformedRequest"
	}
	return "ErrUnidentified"
}

// TestAnswers: the Go host, given each answer by the fake guest, returns
// what abi.ApplyAnswer returns for it and changes the record as it does; a
// malformed answer is ErrMalformedAnswer and changes nothing. It also keeps
// js/testdata/answers.json what these cases give (-update-fixture).
func TestAnswers(t *testing.T) {
	h := fakeHost(t, fakeGuest())
	fx := answersFixture{
		Comment: "generated by go test ./wasm/ -run TestAnswers -update-fixture from abi.ApplyAnswer; read by host.test.mjs",
		Commands: map[string]int{"canned": fakeCanned, "trap": fakeTrap, "exit": fakeExit, "grow": fakeGrow, "echo": fakeEcho, "outside": fakeOutside,
			"atEnd": fakeAtEnd, "pastEnd": fakePastEnd},
		FakeBadInputSize: fakeBadInputSize,
	}
	kinds := map[string]int{}
	for _, c := range answerCases() {
		start := echoRecord(c.answer)
		want := start
		wantRes, wantErr := abi.ApplyAnswer(c.answer, &want, &c.ev)

		got := start
		ev := c.ev
		p := core.Policy{LeaseDuration: fakeEcho}
		res, err := h.Step(&got, &ev, &p)
		if res != wantRes || !reflect.DeepEqual(got, want) || compareErrors(wantErr, err) != "" || errors.Is(err, ErrTrap) {
			t.Fatalf("%s: the host gave %+v, %v, record %#v;\nApplyAnswer gives %+v, %v, record %#v", c.name, res, err, got, wantRes, wantErr, want)
		}
		malformed := errors.Is(wantErr, ErrMalformedAnswer)
		if wantErr != nil && !reflect.DeepEqual(want, start) {
			t.Fatalf("%s: an answer that is an error changed the record", c.name)
		}
		fc := answerFixtureCase{Name: c.name, Record: fxRecord(start), Event: fxEvent(c.ev), Malformed: malformed}
		switch {
		case malformed:
			kinds["malformed"]++
		case wantErr != nil:
			var re *abi.RefusedError
			if !errors.As(wantErr, &re) || !core.Refused(wantErr) && re.Sentinel != nil && re.Sentinel != abi.ErrMalformedRequest {
				t.Fatalf("%s: %v is not a refusal", c.name, wantErr)
			}
			fc.Error = &fixtureError{Code: codeName(c.answer[1]), Message: wantErr.Error()}
			kinds["refused"]++
		default:
			fc.Transition = fxTransition(wantRes)
			after := fxRecord(want)
			fc.After = &after
			kinds["ok"]++
		}
		fx.Cases = append(fx.Cases, fc)
	}
	if kinds["ok"] < 8 || kinds["refused"] < 18 || kinds["malformed"] < 100 {
		t.Fatalf("the cases are not what they claim: %v", kinds)
	}
	keepJSONFixture(t, answersPath, "TestAnswers", fx)
}

// TestAnswerSpotChecks states what the answers fixture's reference gives in
// a few cases by hand, so that it does not only hold the hosts to itself.
func TestAnswerSpotChecks(t *testing.T) {
	h := fakeHost(t, fakeGuest())
	step := func(name string) (core.Transition, core.Record, core.Event, error) {
		for _, c := range answerCases() {
			if c.name == name {
				rec, ev := echoRecord(c.answer), c.ev
				p := core.Policy{LeaseDuration: fakeEcho}
				res, err := h.Step(&rec, &ev, &p)
				return res, rec, ev, err
			}
		}
		t.Fatalf("no case %q", name)
		panic("unreachable")
	}
	res, rec, _, err := step("ok: every field changed, extremes")
	if err != nil || res.Decision.Token != math.MaxUint64 || res.Decision.RetryAfter != math.MinInt64 || res.Write.ExpectToken != math.MaxUint64-1 {
		t.Fatalf("extremes: %+v, %v", res, err)
	}
	if rec.Token != math.MaxUint64 || rec.ReconcileAttempts != math.MaxUint32 || rec.Response.SchemaVersion != math.MaxUint32 || rec.Response.StatusCode != -1 {
		t.Fatalf("extremes: record %#v", rec)
	}
	if rec.Response.Headers == nil || len(rec.Response.Headers) != 0 || rec.Response.Body != nil {
		t.Fatalf("an explicit response with empty headers and a nil body came back as %#v", rec.Response)
	}
	if !rec.LockedUntil.Equal(time.Unix(-1, 500_000_000)) || rec.LockedUntil.Location() != time.UTC || !rec.CreatedAt.IsZero() {
		t.Fatalf("times: locked until %v (%v), created at %v", rec.LockedUntil, rec.LockedUntil.Location(), rec.CreatedAt)
	}
	if rec.ExpiresAt.Unix() != math.MaxInt64 || rec.CompletedAt.Unix() != math.MinInt64 || rec.ReconcileAfter.Unix() != 1<<40 {
		t.Fatalf("far times: %d %d %d", rec.ExpiresAt.Unix(), rec.CompletedAt.Unix(), rec.ReconcileAfter.Unix())
	}
	_, rec, _, _ = step("ok: explicit response, nil headers, empty body")
	if rec.Response.Headers != nil || rec.Response.Body == nil || len(rec.Response.Body) != 0 {
		t.Fatalf("an explicit response with nil headers and an empty body came back as %#v", rec.Response)
	}
	_, rec, ev, _ := step("ok: the event's response, a header and a body")
	if &rec.Response.Body[0] != &ev.Response.Body[0] || &rec.Response.Headers[0] != &ev.Response.Headers[0] {
		t.Fatal("a response taken from the event is a copy, not the event's own as the native Step keeps it")
	}
	_, rec, ev, _ = step("ok: times from now, in now's location")
	if rec.LockedUntil.Location() != ev.Now.Location() || rec.LockedUntil.Location() != answerZone {
		t.Fatalf("a time from now is in %v, want now's %v", rec.LockedUntil.Location(), ev.Now.Location())
	}
	_, rec, _, _ = step("ok: nothing changed")
	if !reflect.DeepEqual(rec, echoRecord(rec.Response.Body)) {
		t.Fatal("an answer without changes changed the record")
	}
	for _, name := range []string{"refused: code 7", "refused: code 200", "refused: code 254"} {
		_, _, _, err := step(name)
		var re *abi.RefusedError
		if !errors.As(err, &re) {
			t.Fatalf("%s: %v is not a refusal", name, err)
		}
		if name == "refused: code 7" && (!errors.Is(err, core.ErrResponseInvalid) || !core.Refused(err)) {
			t.Fatalf("%s: %v does not match core.ErrResponseInvalid", name, err)
		}
		if name == "refused: code 200" && (re.Sentinel != nil || core.Refused(err)) {
			t.Fatalf("%s: %v matches a sentinel", name, err)
		}
		if name == "refused: code 254" && !errors.Is(err, abi.ErrMalformedRequest) {
			t.Fatalf("%s: %v is not ErrMalformedRequest", name, err)
		}
	}
}

// TestAnswerCopied: what the host keeps of an answer (changed strings, an
// explicit response, a refusal's message) is its own copy: the next step
// on the instance, which overwrites the guest's buffers, changes none of it
// (ABI.md, "Memory"). The fake echoes its answer from the request, in its
// input buffer; a request of the same size overwrites all of it.
func TestAnswerCopied(t *testing.T) {
	h := fakeHost(t, fakeGuest())
	cases := map[string]answerCase{}
	for _, c := range answerCases() {
		cases[c.name] = c
	}
	for _, name := range []string{"ok: every field changed, extremes", "ok: explicit response, headers and body", "refused: code 7"} {
		c, ok := cases[name]
		if !ok {
			t.Fatalf("no case %q", name)
		}
		rec, ev, p := echoRecord(c.answer), c.ev, core.Policy{LeaseDuration: fakeEcho}
		size := len(abi.AppendRequest(nil, &rec, &ev, &p))
		_, err := h.Step(&rec, &ev, &p)
		if (err != nil) != strings.HasPrefix(name, "refused") {
			t.Fatalf("%s: %v", name, err)
		}
		kept := fmt.Sprintf("%#v %v", rec, err)
		mustCanned(t, h, strings.Repeat("k", size-int(requestSize(""))))
		if now := fmt.Sprintf("%#v %v", rec, err); now != kept {
			t.Fatalf("%s: the next step changed what the host kept:\n was %s\n now %s", name, kept, now)
		}
	}
}
