package idem_test

import (
	"context"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// TestResultsAreTheCallersToKeep (issue 20 §3): no edit to a Result reaches
// the store: not to a replay's body, header values or header list, nor to
// the executed response after Do returned. Over the memory store's fast
// path and over its load-and-compare-and-set path.
func TestResultsAreTheCallersToKeep(t *testing.T) {
	for name, s := range map[string]store.Store{
		"fast path":      memstore.New(memstore.Options{}),
		"load and write": store.HideApplier(memstore.New(memstore.Options{})),
	} {
		t.Run(name, func(t *testing.T) {
			ex, err := idem.New(s)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			req := request(key1, payload)
			mine := created.Clone() // the action's own response, which it edits after Do
			first, err := ex.Do(ctx, req, func(context.Context, idem.Attempt) (idem.Response, error) { return mine, nil })
			if err != nil || first.Kind != idem.ResultExecuted {
				t.Fatalf("%+v %v", first, err)
			}
			first.Response.Body[0] = 'X'
			first.Response.Headers[0].Value = "text/evil"
			for i := range 3 {
				r, err := ex.Do(ctx, req, mustNotRun(t))
				if err != nil || r.Kind != idem.ResultReplayed || !r.Response.Equal(created) {
					t.Fatalf("replay %d: %+v %v, want %+v", i, r, err, created)
				}
				// Edit this replay every way a caller could.
				r.Response.Body[0] = 'Y'
				r.Response.Headers[0].Value = "text/evil"
				r.Response.Headers[0].Name = "X-Evil"
				r.Response.Headers = append(r.Response.Headers[:1], idem.Header{Name: "Set-Cookie", Value: "a=b"})
				r.Response.StatusCode = 500
			}
		})
	}
}

// mustNotRun is an action that must not run.
func mustNotRun(t *testing.T) idem.Action {
	return func(context.Context, idem.Attempt) (idem.Response, error) {
		t.Error("the action ran on a replay")
		return idem.Response{}, nil
	}
}
