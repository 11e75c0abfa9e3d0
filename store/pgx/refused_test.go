package pgxstore

import (
	"context"
	"errors"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// refusingStore is a Store over a table this test's deployment tightened:
// a CHECK refuses a stored 418 and any key that starts with "refused-"
// (class 23, check_violation), and a trigger refuses a stored 299 with
// invalid_parameter_value (class 22), as a deployment's own rules might.
func refusingStore(t *testing.T, db *testDB) *Store {
	t.Helper()
	s := db.newStore(t, Options{Table: "refusing"})
	ctx := context.Background()
	for _, sql := range []string{
		`ALTER TABLE ` + s.n.qualified + ` ADD CONSTRAINT no_teapot CHECK (response_status <> 418),
			ADD CONSTRAINT no_refused_keys CHECK (idem_key NOT LIKE 'refused-%')`,
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

// wantRefused fails unless err is the store's refusal: store.ErrRefused,
// never ErrAmbiguous (a statement the server refused changed nothing) nor
// a conflict.
func wantRefused(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrRefused) || errors.Is(err, ErrAmbiguous) || errors.Is(err, store.ErrConflict) {
		t.Fatalf("%s: %v, want store.ErrRefused (not ErrAmbiguous, not ErrConflict)", what, err)
	}
}

// TestRefusedIsNotAmbiguous: a data exception (class 22) or an integrity
// violation (class 23, but the insert's unique key) is store.ErrRefused on
// every statement, and nothing was written.
func TestRefusedIsNotAmbiguous(t *testing.T) {
	db := newTestDB(t)
	s := refusingStore(t, db)
	ctx := context.Background()
	p := core.PolicyDefault()
	unchanged := func(t *testing.T, want core.Record) {
		t.Helper()
		if snap, err := s.Load(ctx, want.Scope); err != nil || snap.Record.Version != want.Version || snap.Record.Status != want.Status {
			t.Fatalf("after a refusal: %s (%v), want %s", snap.Record.Describe(), err, want.Describe())
		}
	}
	t.Run("insert", func(t *testing.T) {
		sc := testScope("insert-refusal")
		rec := reserved(t, s, sc)
		teapot := rec
		teapot.Scope = testScope("teapot-insert")
		teapot.Response.StatusCode = 418
		wantRefused(t, "insert (check)", s.Insert(ctx, &teapot))
		unchanged(t, core.Record{Scope: teapot.Scope})
	})
	t.Run("compare-and-set", func(t *testing.T) {
		rec := reserved(t, s, testScope("cas-refusal"))
		for _, status := range []int{418, 299} {
			next := rec
			next.Version, next.Status, next.Response = 2, core.StatusCompleted, core.Response{StatusCode: status}
			wantRefused(t, "compare-and-set of "+itoa(status), s.CompareAndSet(ctx, &next, rec.Version, rec.Token))
			unchanged(t, rec)
		}
	})
	t.Run("reserve", func(t *testing.T) {
		sc := core.Scope{Principal: "p", UseCase: "u", Key: "refused-0123456789abcdef"}
		var a store.Applied
		wantRefused(t, "reserve", store.Apply(ctx, s, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP}, &p, &a))
		unchanged(t, core.Record{Scope: sc})
	})
	t.Run("apply-and-apply-held", func(t *testing.T) {
		for _, status := range []int{418, 299} {
			rec := reserved(t, s, testScope("apply-refusal-"+itoa(status)))
			ev := core.Event{Kind: core.EventComplete, Token: rec.Token, Response: core.Response{StatusCode: status}}
			var a store.Applied
			wantRefused(t, "apply complete", store.Apply(ctx, s, rec.Scope, ev, &p, &a))
			unchanged(t, rec)
			held := rec
			wantRefused(t, "apply-held complete", store.ApplyHeld(ctx, s, &held, ev, &p, &a))
			unchanged(t, rec)
		}
	})
	t.Run("load-of-a-scope-text-cannot-hold", func(t *testing.T) {
		// The core never hands a driver such a scope (Scope.Validate);
		// PostgreSQL refuses it (22021), and that is a refusal too.
		_, err := s.Load(ctx, core.Scope{Principal: "\xe9", UseCase: "u", Key: "0123456789abcdef"})
		wantRefused(t, "load", err)
	})
}

// TestRefusedThroughDo: through the executor, a refused reserve is
// idem.ErrStoreRefused and nothing runs; a refused completion is an executed
// result that was not recorded, and the key goes to the reconciler at once
// (unknown, store_refused), not in_progress until its lease ends.
func TestRefusedThroughDo(t *testing.T) {
	db := newTestDB(t)
	s := refusingStore(t, db)
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
	_, err = ex.Do(ctx, idem.Request{Scope: core.Scope{Principal: "p", UseCase: "u", Key: "refused-0123456789abcdef"}, Fingerprint: testFP}, teapot)
	if !errors.Is(err, idem.ErrStoreRefused) || runs != 0 {
		t.Fatalf("refused reserve: %v (the action ran %d times), want idem.ErrStoreRefused and no run", err, runs)
	}
	req := idem.Request{Scope: testScope("teapot-do"), Fingerprint: testFP}
	r, err := ex.Do(ctx, req, teapot)
	if err != nil || r.Kind != idem.ResultExecuted || r.Recorded || runs != 1 {
		t.Fatalf("refused completion: %+v, %v (%d runs), want executed, not recorded", r, err, runs)
	}
	snap, err := s.Load(ctx, req.Scope)
	if err != nil || snap.Record.Status != core.StatusUnknown || snap.Record.LastErrorCode != "store_refused" {
		t.Fatalf("after a refused completion: %s (%v), want unknown with store_refused", snap.Record.Describe(), err)
	}
}
