package redisstore

import (
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/idemkit/idem/core"
)

// TestResponseBytesRoundTrip: every response the core could store reads
// back byte for byte (bodies and header values of any bytes).
func TestResponseBytesRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := core.Response{
			StatusCode:    rapid.IntRange(-1, 999).Draw(t, "status"),
			SchemaVersion: rapid.Uint32().Draw(t, "schema"),
			Body:          rapid.SliceOf(rapid.Byte()).Draw(t, "body"),
		}
		for range rapid.IntRange(0, 4).Draw(t, "headers") {
			r.Headers = append(r.Headers, core.Header{Name: rapid.String().Draw(t, "name"), Value: string(rapid.SliceOf(rapid.Byte()).Draw(t, "value"))})
		}
		got, err := parseResponse(responseBytes(&r))
		if err != nil || !got.Equal(r) {
			t.Fatalf("%+v read back as %+v, %v", r, got, err)
		}
	})
}

// TestTimesRoundTrip: times, before and after the epoch, to the
// nanosecond, and offsets floored so that their nanoseconds are positive.
func TestTimesRoundTrip(t *testing.T) {
	for _, tm := range []time.Time{time.Unix(0, 1), time.Unix(-1, 999999999), time.Date(1900, 2, 3, 4, 5, 6, 7, time.UTC), time.Date(2262, 1, 1, 0, 0, 0, 1, time.UTC)} {
		got, err := parseTime(timeString(tm))
		if err != nil || !got.Equal(tm) {
			t.Errorf("%v read back as %v, %v", tm, got, err)
		}
	}
	for d, want := range map[time.Duration]string{-1: "-1.999999999", time.Second + 3: "1.000000003", -time.Second: "-1.000000000", 0: "0.000000000"} {
		if got := offsetString(d); got != want {
			t.Errorf("offsetString(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestBadRepliesAreErrors: what a server (or a key written by someone
// else) could answer that the store never writes is an error wrapping
// core.ErrInvalidRecord, never a panic.
func TestBadRepliesAreErrors(t *testing.T) {
	sc := testScope("bad")
	fp := string(make([]byte, core.FingerprintBytes))
	for name, flat := range map[string][]any{
		"odd":           {"s"},
		"not a string":  {"s", int64(1)},
		"no token":      {"s", "1", "f", fp, "v", "1"},
		"bad status":    {"s", "9", "f", fp, "t", "1", "v", "1"},
		"short print":   {"s", "1", "f", "abc", "t", "1", "v", "1"},
		"bad token":     {"s", "1", "f", fp, "t", "xyz", "v", "1"},
		"bad time":      {"s", "1", "f", fp, "t", "1", "v", "1", "lu", "12.3"},
		"bad response":  {"s", "1", "f", fp, "t", "1", "v", "1", "r", "\xff"},
		"unknown field": {"s", "1", "f", fp, "t", "1", "v", "1", "zz", "1"},
	} {
		if _, err := decodeRecord(sc, flat, true); !errors.Is(err, core.ErrInvalidRecord) {
			t.Errorf("%s: %v, want core.ErrInvalidRecord", name, err)
		}
	}
	for _, v := range []any{nil, "x", []any{int64(1)}, []any{int64(2), int64(1), int64(1), int64(1), []any{}}, []any{int64(1), int64(1), int64(1), int64(1), "x"}} {
		if _, ok := parseReply(v); ok {
			t.Errorf("parseReply(%v) accepted", v)
		}
	}
	where := func(int) (int, int, bool) { return 0, 0, true }
	for _, v := range []any{nil, []any{int64(1)}, []any{int64(1), int64(1), "x"}, []any{int64(1), int64(1), []any{int64(0), "not a member", []any{}}}, []any{int64(1), int64(1), []any{"x", "1:a1:b1:c1:d", []any{}}}} {
		if _, err := dueItems(v, true, where); !errors.Is(err, core.ErrInvalidRecord) {
			t.Errorf("dueItems(%v): %v, want core.ErrInvalidRecord", v, err)
		}
	}
}
