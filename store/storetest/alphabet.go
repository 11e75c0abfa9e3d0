package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	"github.com/idemkit/idem/store"
)

// What the core accepts into a record, byte by byte (SPEC §5: what the core
// accepts, every driver stores byte for byte). A database column whose
// alphabet is narrower (PostgreSQL text rejects invalid UTF-8) would
// charge a client and then fail to record the outcome, for ever.

// tchars is every RFC 9110 token character (tchar), in byte order: the
// alphabet of header names and error codes. TestAlphabetsAreTheCores holds
// it to the core's own rule.
const tchars = "!#$%&'*+-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ^_`abcdefghijklmnopqrstuvwxyz|~"

// byteRange is the bytes lo..hi, in order.
func byteRange(lo, hi byte) string {
	var b strings.Builder
	for c := int(lo); c <= int(hi); c++ {
		b.WriteByte(byte(c))
	}
	return b.String()
}

// acceptedHeaderValues are header values the core accepts (RFC 9110 field
// content: visible ASCII, space, tab, and obs-text 0x80..0xFF), among them
// strings that are not UTF-8 at all.
func acceptedHeaderValues() []string {
	return []string{
		byteRange(0x20, 0x7e), // every visible ASCII byte and the space
		"\t", "a\tb\t",        // horizontal tab
		byteRange(0x80, 0xff), // every obs-text byte
		"\xe9",                // Latin-1 é alone: issue 20's Location header
		"/accounts/\xe9/payments",
		"caf\xc3\xa9",      // valid UTF-8, for contrast
		"\xc3",             // a truncated sequence
		"\xc0\xaf",         // an overlong encoding of '/'
		"\xed\xa0\x80",     // a UTF-16 surrogate
		"\xf4\x90\x80\x80", // past U+10FFFF
		"\xef\xbf\xbd",     // U+FFFD itself: what a lossy conversion writes instead
		"\x80", "\xff",
		"", // empty
	}
}

// acceptedResponses are responses the core accepts that hold every byte of
// the alphabets above, and the bodies at the edges: all 256 byte values,
// none (nil) and empty. The core's Response.Equal does not tell a nil body
// from an empty one (neither does HTTP), so neither does the suite: both
// must come back with no bytes.
func acceptedResponses() []core.Response {
	rich := core.Response{StatusCode: 200, Headers: []core.Header{{Name: tchars, Value: "every tchar in the name"}},
		Body: []byte(byteRange(0x00, 0xff)), SchemaVersion: 7}
	for i, v := range acceptedHeaderValues() {
		rich.Headers = append(rich.Headers, core.Header{Name: fmt.Sprintf("X-Value-%02d", i), Value: v})
	}
	return []core.Response{
		rich,
		{StatusCode: 201, Headers: []core.Header{{Name: "Location", Value: "/accounts/\xe9/payments"}}},
		{StatusCode: 202, Headers: []core.Header{{Name: "X-Empty", Value: ""}}, Body: []byte{}},
	}
}

// acceptedErrorCodes are two codes of exactly core.ErrorCodeBytesMax bytes
// that between them hold every tchar.
func acceptedErrorCodes() []core.ErrorCode {
	return []core.ErrorCode{core.ErrorCode(tchars[:core.ErrorCodeBytesMax]), core.ErrorCode(tchars[len(tchars)-core.ErrorCodeBytesMax:])}
}

// acceptedBytes is the contract case: every value above, written through
// every write path the store has, loads back byte for byte.
func (c *contract) acceptedBytes(t *testing.T) {
	s := c.newStore(t)
	i := 0
	scope := func() core.Scope { i++; return c.scope(t, i) }
	for _, p := range checkAcceptedBytes(context.Background(), s, c.d, scope) {
		t.Error(p)
	}
}

// checkAcceptedBytes writes the accepted responses and error codes into s
// through Insert, CompareAndSet, store.Apply (the store's Applier when it
// has one) and store.ApplyHeld (its HeldApplier), each on a scope of its
// own from scope, and returns what did not come back as written.
func checkAcceptedBytes(ctx context.Context, s store.Store, d linearizability.ModelOptions, scope func() core.Scope) []string {
	b := &byteCheck{ctx: ctx, s: s, d: d, scope: scope, p: core.PolicyDefault()}
	for i, r := range acceptedResponses() {
		b.raw(fmt.Sprintf("insert response %d", i), func(rec *core.Record) { rec.Status, rec.Response = core.StatusCompleted, r })
		b.events(fmt.Sprintf("apply complete %d", i), false, core.Event{Kind: core.EventComplete, Response: r})
		b.events(fmt.Sprintf("apply-held complete %d", i), true, core.Event{Kind: core.EventComplete, Response: r})
		b.events(fmt.Sprintf("apply resolve executed %d", i), false, core.Event{Kind: core.EventMarkUnknown},
			core.Event{Kind: core.EventResolve, Verdict: core.VerdictExecuted, Response: r})
	}
	for i, code := range acceptedErrorCodes() {
		b.raw(fmt.Sprintf("insert error code %d", i), func(rec *core.Record) { rec.Status, rec.LastErrorCode = core.StatusUnknown, code })
		b.events(fmt.Sprintf("apply fail %d", i), false, core.Event{Kind: core.EventFail, ErrorCode: code})
		b.events(fmt.Sprintf("apply-held mark unknown %d", i), true, core.Event{Kind: core.EventMarkUnknown, ErrorCode: code})
		b.events(fmt.Sprintf("apply resolve still unknown %d", i), false, core.Event{Kind: core.EventMarkUnknown},
			core.Event{Kind: core.EventResolve, Verdict: core.VerdictStillUnknown, ErrorCode: code})
	}
	return b.problems
}

type byteCheck struct {
	ctx      context.Context
	s        store.Store
	d        linearizability.ModelOptions
	scope    func() core.Scope
	p        core.Policy
	problems []string
}

func (b *byteCheck) fail(what string, format string, args ...any) {
	b.problems = append(b.problems, what+": "+fmt.Sprintf(format, args...))
}

// raw stores a record that set fills in, once by Insert and once by a
// CompareAndSet over a plain record, and loads each back.
func (b *byteCheck) raw(what string, set func(*core.Record)) {
	for _, how := range []string{"insert", "compare-and-set"} {
		sc := b.scope()
		snap, err := b.s.Load(b.ctx, sc)
		if err != nil {
			b.fail(what, "load: %v", err)
			return
		}
		rec := core.Record{Scope: sc, Status: core.StatusInProgress, Fingerprint: fpA, Token: snap.FreshToken, Version: 1,
			CreatedAt: snap.Now, LockedUntil: snap.Now.Add(time.Minute)}
		if how == "compare-and-set" {
			if err := b.s.Insert(b.ctx, &rec); err != nil {
				b.fail(what, "insert of the plain record: %v", err)
				continue
			}
			rec.Version = 2
		}
		set(&rec)
		if how == "insert" {
			err = b.s.Insert(b.ctx, &rec)
		} else {
			err = b.s.CompareAndSet(b.ctx, &rec, 1, rec.Token)
		}
		if err != nil {
			b.fail(what+" by "+how, "%v", err)
			continue
		}
		b.loadsAs(what+" by "+how, &rec)
	}
}

// events reserves a scope and applies evs to the attempt (its token set),
// through store.ApplyHeld holding what the last event left when held, else
// through store.Apply, and loads the record back.
func (b *byteCheck) events(what string, held bool, evs ...core.Event) {
	sc := b.scope()
	var a store.Applied
	if err := store.Apply(b.ctx, b.s, sc, core.Event{Kind: core.EventReserve, Fingerprint: fpA}, &b.p, &a); err != nil {
		b.fail(what, "reserve: %v", err)
		return
	}
	tok := a.Transition.Decision.Token
	for _, ev := range evs {
		ev.Token = tok
		var err error
		if held {
			h := a.Record
			err = store.ApplyHeld(b.ctx, b.s, &h, ev, &b.p, &a)
		} else {
			err = store.Apply(b.ctx, b.s, sc, ev, &b.p, &a)
		}
		if err != nil {
			b.fail(what, "%v: %v", ev.Kind, err)
			return
		}
	}
	last := evs[len(evs)-1]
	if !a.Record.Response.Equal(last.Response) && last.Response.StatusCode != 0 {
		b.fail(what, "the core did not store the response: %s", a.Transition.Describe())
		return
	}
	if last.ErrorCode != "" && a.Record.LastErrorCode != last.ErrorCode {
		b.fail(what, "the core did not store the error code: %s", a.Transition.Describe())
		return
	}
	b.loadsAs(what, &a.Record)
}

// loadsAs loads want's scope and compares the record byte for byte.
func (b *byteCheck) loadsAs(what string, want *core.Record) {
	snap, err := b.s.Load(b.ctx, want.Scope)
	if err != nil {
		b.fail(what, "load: %v", err)
		return
	}
	got := &snap.Record
	if d := responseDiff(&got.Response, &want.Response); d != "" {
		b.fail(what, "the response did not load back byte for byte: %s", d)
		return
	}
	if got.LastErrorCode != want.LastErrorCode {
		b.fail(what, "error code loaded as %q, stored %q", got.LastErrorCode, want.LastErrorCode)
		return
	}
	if !b.d.SameRecord(got, want) {
		b.fail(what, "loaded %s, stored %s", got.Describe(), want.Describe())
	}
}

// responseDiff names the first difference between two responses, "" when
// they are Equal.
func responseDiff(got, want *core.Response) string {
	if got.Equal(*want) {
		return ""
	}
	switch {
	case got.StatusCode != want.StatusCode || got.SchemaVersion != want.SchemaVersion:
		return fmt.Sprintf("status %d schema %d, want %d schema %d", got.StatusCode, got.SchemaVersion, want.StatusCode, want.SchemaVersion)
	case len(got.Headers) != len(want.Headers):
		return fmt.Sprintf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i := range want.Headers {
		if got.Headers[i] != want.Headers[i] {
			return fmt.Sprintf("header %d is %q: %q, want %q: %q", i, got.Headers[i].Name, got.Headers[i].Value, want.Headers[i].Name, want.Headers[i].Value)
		}
	}
	for i := range min(len(got.Body), len(want.Body)) {
		if got.Body[i] != want.Body[i] {
			return fmt.Sprintf("body byte %d is 0x%02x, want 0x%02x", i, got.Body[i], want.Body[i])
		}
	}
	return fmt.Sprintf("a body of %d bytes, want %d", len(got.Body), len(want.Body))
}
