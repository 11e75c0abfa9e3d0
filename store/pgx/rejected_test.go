package pgxstore

import (
	"context"
	"errors"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// rejectingStore is a Store over a table this test's deployment tightened:
// a CHECK rejects a stored 418 and any key that starts with "rejected-"
// (class 23, check_violation), and a trigger rejects a stored 299 with
// invalid_parameter_value (class 22), as a deployment's own rules might.
func rejectingStore(t *testing.T, db *testDB) *Store {
	t.Helper()
	s := db.newStore(t, Options{Table: "rejecting"})
	ctx := context.Background()
	for _, sql := range []string{
		`ALTER TABLE ` + s.n.qualified + ` ADD CONSTRAINT no_teapot CHECK (response_status <> 418),
			ADD CONSTRAINT no_rejected_keys CHECK (idem_key NOT LIKE 'rejected-%')`,
		`CREATE FUNCTION ` + db.schema + `.no_299() RETURNS trigger LANGUAGE plpgsql AS $fn$
			BEGIN IF NEW.response_status = 299 THEN RAISE EXCEPTION 'no 299' USING ERRCODE = '22023'; END IF; RETURN NEW; END $fn$`,
		`CREATE TRIGGER no_299 BEFORE INSERT OR UPDATE ON ` + s.n.qualified + ` FOR EACH ROW EXECUTE FUNCTION ` + db.schema + `.no_299()`,
	} {
		if _, err := db.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// wantRejected fails unless err is the store's rejection: store.ErrRejected,
// never ErrAmbiguous (a statement the server rejected changed nothing) nor
// a conflict.
func wantRejected(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrRejected) || errors.Is(err, ErrAmbiguous) || errors.Is(err, store.ErrConflict) {
		t.Fatalf("%s: %v, want store.ErrRejected (not ErrAmbiguous, not ErrConflict)", what, err)
	}
}

// TestRejectedIsNotAmbiguous: a data exception (class 22) or an integrity
// violation (class 23, but the insert's unique key) is store.ErrRejected on
// every statement, and nothing was written.
func TestRejectedIsNotAmbiguous(t *testing.T) {
	db := newTestDB(t)
	s := rejectingStore(t, db)
	ctx := context.Background()
	p := core.PolicyDefault()
	unchanged := func(t *testing.T, want core.Record) {
		t.Helper()
		if snap, err := s.Load(ctx, want.Scope); err != nil || snap.Record.Version != want.Version || snap.Record.Status != want.Status {
			t.Fatalf("after a rejection: %s (%v), want %s", snap.Record.Describe(), err, want.Describe())
		}
	}
	t.Run("insert", func(t *testing.T) {
		sc := testScope("insert-rejection")
		rec := reserved(t, s, sc)
		teapot := rec
		teapot.Scope = testScope("teapot-insert")
		teapot.Response.StatusCode = 418
		wantRejected(t, "insert (check)", s.Insert(ctx, &teapot))
		unchanged(t, core.Record{Scope: teapot.Scope})
	})
	t.Run("compare-and-set", func(t *testing.T) {
		rec := reserved(t, s, testScope("cas-rejection"))
		for _, status := range []int{418, 299} {
			next := rec
			next.Version, next.Status, next.Response = 2, core.StatusCompleted, core.Response{StatusCode: status}
			wantRejected(t, "compare-and-set of "+itoa(status), s.CompareAndSet(ctx, &next, rec.Version, rec.Token))
			unchanged(t, rec)
		}
	})
	t.Run("reserve", func(t *testing.T) {
		sc := core.Scope{Principal: "p", UseCase: "u", Key: "rejected-0123456789abcdef"}
		var a store.Applied
		wantRejected(t, "reserve", store.Apply(ctx, s, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP}, &p, &a))
		unchanged(t, core.Record{Scope: sc})
	})
	t.Run("apply-and-apply-held", func(t *testing.T) {
		for _, status := range []int{418, 299} {
			rec := reserved(t, s, testScope("apply-rejection-"+itoa(status)))
			ev := core.Event{Kind: core.EventComplete, Token: rec.Token, Response: core.Response{StatusCode: status}}
			var a store.Applied
			wantRejected(t, "apply complete", store.Apply(ctx, s, rec.Scope, ev, &p, &a))
			unchanged(t, rec)
			held := rec
			wantRejected(t, "apply-held complete", store.ApplyHeld(ctx, s, &held, ev, &p, &a))
			unchanged(t, rec)
		}
	})
	t.Run("load-of-a-scope-text-cannot-hold", func(t *testing.T) {
		// The core never hands a driver such a scope (Scope.Validate);
		// PostgreSQL rejects it (22021), and that is a rejection too.
		_, err := s.Load(ctx, core.Scope{Principal: "\xe9", UseCase: "u", Key: "0123456789abcdef"})
		wantRejected(t, "load", err)
	})
}

// TestRejectedThroughDo: through the executor, a rejected reserve is
// idem.ErrStoreRejected and nothing runs; a rejected completion is an executed
// result that was not recorded, and the key goes to the reconciler at once
// (unknown, store_rejected), not in_progress until its lease ends.
func TestRejectedThroughDo(t *testing.T) {
	db := newTestDB(t)
	s := rejectingStore(t, db)
	ex, err := idem.New(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	runs := 0
	teapot := func(context.Context, idem.Attempt) (idem.Response, error) {
		runs++
		return idem.Response{StatusCode: 418, Body: []byte("short and stout")}, nil
	}
	_, err = ex.Do(ctx, idem.Request{Scope: core.Scope{Principal: "p", UseCase: "u", Key: "rejected-0123456789abcdef"}, Fingerprint: testFP}, teapot)
	if !errors.Is(err, idem.ErrStoreRejected) || runs != 0 {
		t.Fatalf("rejected reserve: %v (the action ran %d times), want idem.ErrStoreRejected and no run", err, runs)
	}
	req := idem.Request{Scope: testScope("teapot-do"), Fingerprint: testFP}
	r, err := ex.Do(ctx, req, teapot)
	if err != nil || r.Kind != idem.ResultExecuted || r.Recorded || runs != 1 {
		t.Fatalf("rejected completion: %+v, %v (%d runs), want executed, not recorded", r, err, runs)
	}
	snap, err := s.Load(ctx, req.Scope)
	if err != nil || snap.Record.Status != core.StatusUnknown || snap.Record.LastErrorCode != "store_rejected" {
		t.Fatalf("after a rejected completion: %s (%v), want unknown with store_rejected", snap.Record.Describe(), err)
	}
}
