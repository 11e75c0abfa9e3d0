package pgxstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemkit/idem/core"
)

// migrateDown runs the down migrations of o's table from its version to v
// (v's included), newest first, in one transaction, as a migration tool
// would (with Migrate's names).
func migrateDown(ctx context.Context, db *testDB, o Options, v int) error {
	n, err := o.names()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		have, err := schemaVersion(ctx, tx, n)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+pgx.Identifier{n.schema}.Sanitize()); err != nil {
			return err
		}
		for m := have; m >= v; m-- { // the newest first, all or nothing
			files, err := fs.Glob(Migrations, fmt.Sprintf("migrations/%04d_*.down.sql", m))
			if err != nil || len(files) != 1 {
				return fmt.Errorf("down migration %04d: %v %v", m, files, err)
			}
			sql, err := Migrations.ReadFile(files[0])
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, render(string(sql), n)); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestMigrationHeaderValuesToBytes: a table of version 2, with rows, is
// migrated to 3 by Migrate, and every stored header value is kept; the
// down migration goes back losslessly, and refuses (changing nothing) while
// a value is not UTF-8, which text cannot hold.
func TestMigrationHeaderValuesToBytes(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	o := Options{Schema: db.schema, Table: "upgraded", PollInterval: -1}
	if err := migrateTo(ctx, db.pool, o, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := New(ctx, db.pool, o); err == nil || !strings.Contains(err.Error(), "schema version 2") {
		t.Fatalf("New over version 2: %v, want a refusal that names version 2", err)
	}
	n, _ := o.names()
	// Rows as version 2 held them: text values (UTF-8 only).
	rows := [][]core.Header{
		{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Name", Value: "café ☕ \t"}, {Name: "X-Empty", Value: ""}},
		nil,
		{{Name: "Location", Value: "/accounts/é/payments"}},
	}
	scopes := make([]core.Scope, len(rows))
	for i, hs := range rows {
		scopes[i] = testScope("v2-row-" + itoa(i))
		names, values := make([]string, len(hs)), make([]string, len(hs))
		for j, h := range hs {
			names[j], values[j] = h.Name, h.Value
		}
		_, err := db.pool.Exec(ctx, `INSERT INTO `+n.qualified+` (tenant, principal, use_case, idem_key, status, fingerprint,
			token, version, response_status, response_header_names, response_header_values, response_body, created_at, updated_at)
			VALUES ($1, $2, $3, $4, 'completed', $5, $6, 1, 200, $7, $8::text[], 'body', now(), now())`,
			scopes[i].Tenant, scopes[i].Principal, scopes[i].UseCase, scopes[i].Key, testFP[:], i+1, names, values)
		if err != nil {
			t.Fatal(err)
		}
	}
	loadsAll := func(when string) {
		t.Helper()
		s, err := New(ctx, db.pool, o)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		for i, sc := range scopes {
			snap, err := s.Load(ctx, sc)
			want := core.Response{StatusCode: 200, Headers: rows[i], Body: []byte("body")}
			if err != nil || !snap.Record.Response.Equal(want) {
				t.Fatalf("%s: row %d loads %s (%v), want %s", when, i, snap.Record.Response.Describe(), err, want.Describe())
			}
		}
	}
	if err := Migrate(ctx, db.pool, o); err != nil {
		t.Fatal(err)
	}
	loadsAll("after Migrate from version 2")
	var pe *pgconn.PgError
	_, err := db.pool.Exec(ctx, `UPDATE `+n.qualified+` SET response_header_names = '{X}', response_header_values = ARRAY[NULL::bytea] WHERE idem_key = $1`, scopes[1].Key)
	if !errors.As(err, &pe) || pe.Code != "23514" {
		t.Fatalf("a NULL header value: %v, want the CHECK's refusal (23514)", err)
	}

	// A value that is not UTF-8: the down migration refuses, nothing changes.
	s, err := New(ctx, db.pool, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	obs := reserved(t, s, testScope("v3-obs-text"))
	obs.Status, obs.Version, obs.Response = core.StatusCompleted, 2, core.Response{StatusCode: 200, Headers: []core.Header{{Name: "Location", Value: "/\xe9"}}}
	if err := s.CompareAndSet(ctx, &obs, 1, obs.Token); err != nil {
		t.Fatal(err)
	}
	var encoding string
	if err := db.pool.QueryRow(ctx, `SELECT current_setting('server_encoding')`).Scan(&encoding); err != nil {
		t.Fatal(err)
	}
	if encoding == "SQL_ASCII" {
		// Text there holds any byte but NUL: down keeps the value, up
		// brings it back.
		if err := migrateDown(ctx, db, o, 3); err != nil {
			t.Fatalf("down migration in a SQL_ASCII database: %v", err)
		}
		if err := Migrate(ctx, db.pool, o); err != nil {
			t.Fatal(err)
		}
	} else if err := migrateDown(ctx, db, o, 3); !errors.As(err, &pe) || pe.Code != "22021" {
		t.Fatalf("down migration over a value that is not UTF-8: %v, want SQLSTATE 22021", err)
	}
	loadsAll("after the refused down migration")
	if snap, err := s.Load(ctx, obs.Scope); err != nil || !snap.Record.Response.Equal(obs.Response) {
		t.Fatalf("after the refused down migration: %s (%v)", snap.Record.Response.Describe(), err)
	}
	if err := s.Delete(ctx, obs.Scope, obs.Version, obs.Token); err != nil {
		t.Fatal(err)
	}
	if err := migrateDown(ctx, db, o, 3); err != nil {
		t.Fatalf("down migration: %v", err)
	}
	var values []string
	if err := db.pool.QueryRow(ctx, `SELECT response_header_values FROM `+n.qualified+` WHERE idem_key = $1`, scopes[0].Key).Scan(&values); err != nil ||
		len(values) != 3 || values[1] != rows[0][1].Value || values[2] != "" {
		t.Fatalf("after the down migration: %q (%v), want the text values back", values, err)
	}
	if err := Migrate(ctx, db.pool, o); err != nil {
		t.Fatal(err)
	}
	loadsAll("after down and up again")
}
