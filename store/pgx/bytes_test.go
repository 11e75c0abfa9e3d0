package pgxstore

import (
	"context"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// TestObsTextThroughDo is issue 20's repro over PostgreSQL: a handler that
// echoes a path with %E9 into Location answers a header value that is not
// UTF-8. The core accepts it (RFC 9110 obs-text), so the store must record
// it: the first request executes once and is recorded, and the retry
// replays the same bytes (before migration 0003 the completion was refused
// by a text column, reported as an outage, and the key answered in_progress
// and then outcome_unknown for ever).
func TestObsTextThroughDo(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{})
	ex, err := idem.New(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct{ name, value string }{
		{"lone-e9", "/accounts/\xe9/payments"},
		{"obs-text", "caf\xe9 \x80\x9f\xa0\xff \xc3\xa9\t\xc3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := idem.Response{StatusCode: 201, Headers: []core.Header{{Name: "Location", Value: c.value}}, Body: []byte(`{"id":"p-1"}`)}
			runs := 0
			action := func(context.Context, idem.Attempt) (idem.Response, error) { runs++; return resp.Clone(), nil }
			req := idem.Request{Scope: testScope("obs-" + c.name), Fingerprint: testFP}
			r, err := ex.Do(ctx, req, action)
			if err != nil || r.Kind != idem.ResultExecuted || !r.Recorded {
				t.Fatalf("first request: %+v, %v; want executed and recorded", r, err)
			}
			replay, err := ex.Do(ctx, req, action)
			if err != nil || replay.Kind != idem.ResultReplayed {
				t.Fatalf("retry: %+v, %v; want a replay", replay, err)
			}
			if got := replay.Response.Headers; len(got) != 1 || got[0].Value != c.value || !replay.Response.Equal(resp) {
				t.Fatalf("replayed headers %q, want %q", got, resp.Headers)
			}
			if runs != 1 {
				t.Fatalf("the action ran %d times", runs)
			}
		})
	}
}
