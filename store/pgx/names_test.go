package pgxstore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// TestNamesThatNeedQuoting: Migrate and every statement work with schema
// and table names that hold what SQL gives a meaning to: a quote of each
// kind, a dollar quote ($$, and the tag Migrate would pick), spaces,
// capitals, a comment marker, a line break and a backslash (which
// standard_conforming_strings may or may not read as an escape).
func TestNamesThatNeedQuoting(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	for _, c := range []struct{ name, schema, table string }{
		{"single-quote", "O'Brien", "it's"},
		{"double-quote", `say "hi"`, `rec"ords`},
		{"dollar-quote", "a$$b", "$$; DROP TABLE x; $$"},
		{"dollar-tags", "$idem$", "$idem1$ $fn$"},
		{"spaces-and-capitals", "My Schema", "Idem Records"},
		{"comment-and-newline", "s -- c", "t\nSELECT 1/0; --"},
		{"backslash", `back\slash`, `t\'; SELECT 1/0; --`},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema := db.schema + " " + c.schema
			t.Cleanup(func() {
				_, _ = db.pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			})
			o := Options{Schema: schema, Table: c.table, PollInterval: -1}
			if err := Migrate(ctx, db.pool, o); err != nil {
				t.Fatalf("Migrate(schema %q, table %q): %v", o.Schema, o.Table, err)
			}
			if err := Migrate(ctx, db.pool, o); err != nil {
				t.Fatalf("Migrate again: %v", err)
			}
			s, err := New(ctx, db.pool, o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ex, err := idem.New(s)
			if err != nil {
				t.Fatal(err)
			}
			req := idem.Request{Scope: testScope("quoted-" + c.name), Fingerprint: testFP}
			resp := idem.Response{StatusCode: 201, Headers: []core.Header{{Name: "Location", Value: "/\xe9"}}}
			action := func(context.Context, idem.Attempt) (idem.Response, error) { return resp, nil }
			if r, err := ex.Do(ctx, req, action); err != nil || !r.Recorded {
				t.Fatalf("Do: %+v %v", r, err)
			}
			if r, err := ex.Do(ctx, req, action); err != nil || r.Kind != idem.ResultReplayed || !r.Response.Equal(resp) {
				t.Fatalf("replay: %+v %v", r, err)
			}
			// The load function and the token sequence (a literal in its body).
			snap, err := s.Load(ctx, req.Scope)
			if err != nil || snap.FreshToken <= snap.Record.Token {
				t.Fatalf("load: %s, fresh %d (%v)", snap.Record.Describe(), snap.FreshToken, err)
			}
		})
	}
}
