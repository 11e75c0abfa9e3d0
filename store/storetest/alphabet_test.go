package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
)

// TestAlphabetsAreTheCores holds the suite's alphabets to the core's rules:
// tchars is exactly the bytes the core accepts in an error code (and a
// header name), and every value of acceptedResponses is a response the
// core accepts, so that a driver is held to no more and no less.
func TestAlphabetsAreTheCores(t *testing.T) {
	for c := range 256 {
		in := strings.IndexByte(tchars, byte(c)) >= 0
		if accepted := core.ValidateErrorCode(core.ErrorCode([]byte{byte(c)})) == nil; accepted != in {
			t.Errorf("byte 0x%02x: the core accepts it in an error code: %v; in tchars: %v", c, accepted, in)
		}
	}
	for _, code := range acceptedErrorCodes() {
		if err := core.ValidateErrorCode(code); err != nil || len(code) != core.ErrorCodeBytesMax {
			t.Errorf("error code %q (%d bytes): %v", code, len(code), err)
		}
	}
	p := core.PolicyDefault()
	for i, r := range acceptedResponses() {
		rec := core.Record{Scope: core.Scope{Principal: "p", UseCase: "u", Key: "0123456789abcdef"}}
		now := core.Event{Kind: core.EventReserve, Fingerprint: fpA, Token: 1, Now: time.Unix(1e9, 0)}
		if _, err := core.Step(&rec, &now, &p); err != nil {
			t.Fatal(err)
		}
		ev := core.Event{Kind: core.EventComplete, Token: 1, Response: r, Now: now.Now}
		if _, err := core.Step(&rec, &ev, &p); err != nil {
			t.Errorf("response %d: the core refuses it: %v", i, err)
		}
	}
}

// lossyStore is the toy store with a driver's text columns: header values
// pass through UTF-8 text (invalid bytes become U+FFFD), as a PostgreSQL
// text column that did not refuse them would. The byte check must name what
// it lost.
type lossyStore struct{ *toyStore }

func lossy(rec *core.Record) {
	rec.Response = rec.Response.Clone()
	for i := range rec.Response.Headers {
		rec.Response.Headers[i].Value = strings.ToValidUTF8(rec.Response.Headers[i].Value, "\uFFFD")
	}
}

func (s lossyStore) Insert(ctx context.Context, rec *core.Record) error {
	r := *rec
	lossy(&r)
	return s.toyStore.Insert(ctx, &r)
}

func (s lossyStore) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, t core.Token) error {
	r := *rec
	lossy(&r)
	return s.toyStore.CompareAndSet(ctx, &r, v, t)
}

func TestByteCheckCatchesALossyDriver(t *testing.T) {
	i := 0
	scope := func() core.Scope {
		i++
		return core.Scope{Principal: "p", UseCase: "u", Key: "lossy-0123456789-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)}
	}
	if problems := checkAcceptedBytes(context.Background(), newToy(), linearizability.ModelOptions{}, scope); len(problems) > 0 {
		t.Fatalf("the correct toy store fails the byte check:\n%s", strings.Join(problems, "\n"))
	}
	problems := checkAcceptedBytes(context.Background(), lossyStore{newToy()}, linearizability.ModelOptions{}, scope)
	// Two of the three responses hold a header value that is not UTF-8:
	// each is lost on all five paths (insert, compare-and-set, apply,
	// apply-held, resolve; the toy has no fast path, so all of them end in
	// its Insert or CompareAndSet).
	if want := 2 * 5; len(problems) != want {
		t.Fatalf("%d problems, want %d (every response, every path):\n%s", len(problems), want, strings.Join(problems, "\n"))
	}
	if !strings.Contains(problems[0], `"\xe9"`) && !strings.Contains(problems[0], `\x80`) {
		t.Errorf("the first problem does not show the lost bytes: %s", problems[0])
	}
	t.Logf("the lossy driver, as the suite reports it:\n%s", strings.Join(problems, "\n"))
}
