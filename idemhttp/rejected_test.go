package idemhttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/idemhttp"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// rejectingStore rejects every insert for good, as a database rejects a
// row its constraints reject (store.ErrRejected).
type rejectingStore struct{ store.Store }

func (s rejectingStore) Insert(context.Context, *core.Record) error {
	return fmt.Errorf("check constraint (test): %w", store.ErrRejected)
}

// TestStoreRejectedIsItsOwnProblem: a reserve the store rejects for good is
// answered 500 idempotency_store_rejected, with its own title and no
// Retry-After (retrying will be refused again), not as an outage; the
// handler does not run, and the answer is logged at ERROR.
func TestStoreRejectedIsItsOwnProblem(t *testing.T) {
	mem := memstore.New(memstore.Options{})
	ex, err := idem.New(store.Wrap(store.Layer{Outer: rejectingStore{mem}, Inner: mem})) // no fast path: Insert is called
	if err != nil {
		t.Fatal(err)
	}
	logs := &logCapture{}
	protect, err := idemhttp.New(ex, idemhttp.Route{UseCase: "payments.create", Anonymous: true, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	rec := postTo(protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { runs++ })), context.Background())
	var p idemhttp.Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
	}
	if rec.Code != http.StatusInternalServerError || p.Code != idem.CodeStoreRejected ||
		p.Type != idemhttp.ProblemTypeBase+"idempotency_store_rejected" || p.Title != "The idempotency store rejected the request's record" ||
		rec.Header().Get("Retry-After") != "" || p.RetryAfterSeconds != 0 || runs != 0 {
		t.Fatalf("a rejected reserve: %d %q %s, %d runs; want 500 idempotency_store_rejected without Retry-After, no run", rec.Code, rec.Header(), rec.Body, runs)
	}
	if got := logs.all(); len(got) != 1 || got[0].level != slog.LevelError || got[0].attrs["code"] != string(idem.CodeStoreRejected) {
		t.Fatalf("logged %+v, want one ERROR record with the code", got)
	}
}
