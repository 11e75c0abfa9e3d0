package pgxstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migrations holds the schema as golang-migrate files
// (NNNN_name.up.sql / NNNN_name.down.sql). As stored they name the table
// idem_records (and idem_records_token_seq) in the schema first on
// search_path, so that a migration tool can run them as they are; Migrate
// runs them with the names of Options instead.
//
//go:embed migrations/*.sql
var Migrations embed.FS

// SchemaVersion is the version of the schema this package needs: the number
// of the last migration. Each migration records it in the table's comment,
// so that New can tell a missing or old schema whoever migrated it.
const SchemaVersion = 4

// defaultTable is the table name the migration files use.
const defaultTable = "idem_records"

var migrationName = regexp.MustCompile(`^(\d{4})_[a-z0-9_]+\.(up|down)\.sql$`)

type migration struct {
	version int
	up      string
}

func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(Migrations, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("pgxstore: migration file %q is not NNNN_name.(up|down).sql", e.Name())
		}
		if m[2] != "up" {
			continue
		}
		v, _ := strconv.Atoi(m[1])
		b, err := Migrations.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, up: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// Migrate creates or upgrades the schema of o (its Schema and Table) in the
// database of pool. It is safe when many instances start at once: it holds a
// transaction-level advisory lock, keyed by the table's name, while it reads
// the version and applies what is missing, all in one transaction.
func Migrate(ctx context.Context, pool *pgxpool.Pool, o Options) error {
	return migrateTo(ctx, pool, o, SchemaVersion)
}

// migrateTo is Migrate up to version target (a test builds an older
// schema with it, to migrate from).
func migrateTo(ctx context.Context, pool *pgxpool.Pool, o Options, target int) error {
	n, err := o.names()
	if err != nil {
		return err
	}
	ms, err := migrations()
	if err != nil {
		return err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgxstore: migrate: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after a commit it does nothing
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "idem/pgxstore:"+n.qualified); err != nil {
		return fmt.Errorf("pgxstore: migrate: lock: %w", err)
	}
	if n.schema != "" {
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{n.schema}.Sanitize()); err != nil {
			return fmt.Errorf("pgxstore: migrate: %w", err)
		}
		// SET LOCAL: the unqualified names of the files land in the schema,
		// for this transaction only.
		if _, err := tx.Exec(ctx, "SET LOCAL search_path TO "+pgx.Identifier{n.schema}.Sanitize()); err != nil {
			return fmt.Errorf("pgxstore: migrate: %w", err)
		}
	}
	have, err := schemaVersion(ctx, tx, n)
	if err != nil {
		return err
	}
	if have > SchemaVersion {
		return fmt.Errorf("pgxstore: migrate: %s is at schema version %d, newer than this package's %d: upgrade github.com/idemkit/idem", n.qualified, have, SchemaVersion)
	}
	for _, m := range ms {
		if m.version <= have || m.version > target {
			continue
		}
		if _, err := tx.Exec(ctx, render(m.up, n)); err != nil {
			return fmt.Errorf("pgxstore: migrate: migration %04d: %w", m.version, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgxstore: migrate: commit: %w", err)
	}
	return nil
}

// schemaVersion reads the version the migrations left in the table's
// comment: 0 when there is no table.
func schemaVersion(ctx context.Context, q querier, n *names) (int, error) {
	var comment *string
	var exists bool
	err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, obj_description(to_regclass($1), 'pg_class')`, n.qualified).Scan(&exists, &comment)
	if err != nil {
		return 0, fmt.Errorf("pgxstore: reading the schema version of %s: %w", n.qualified, err)
	}
	if !exists {
		return 0, nil
	}
	if comment == nil {
		return 0, errNoVersion
	}
	i := strings.LastIndex(*comment, schemaVersionMark)
	if i < 0 {
		return 0, errNoVersion
	}
	v, err := strconv.Atoi(strings.TrimSpace((*comment)[i+len(schemaVersionMark):]))
	if err != nil {
		return 0, errNoVersion
	}
	return v, nil
}

const schemaVersionMark = "idem schema version "

var errNoVersion = errors.New("pgxstore: the table exists but its comment carries no idem schema version: it is not an idem table, or its comment was changed")
