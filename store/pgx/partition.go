package pgxstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Time partitioning: a table partitioned by range of created_at (the start
// of a record's incarnation), one partition a span (a day by default), so
// that the tombstones of a past span go with one DROP TABLE once the core
// prunes every record in it (KeepPartitions), instead of a DELETE each.
//
// What it costs, measured in BENCHMARKS.md ("store/pgx: time
// partitioning"): a lookup by scope probes every partition it cannot rule
// out (a new key's, all of them), and PostgreSQL requires the partition key
// in every unique index, so the scope's uniqueness no longer rests on the
// primary key: every insert takes the scope's advisory lock (inserts.go),
// and a new incarnation of a key moves its row to the current span's
// partition (an UPDATE of created_at). Worth it where deleting expired rows
// is most of the database's work; not otherwise.

// PartitionOptions configure Partition and KeepPartitions.
type PartitionOptions struct {
	// Span is the range of created_at of one partition, aligned to the Unix
	// epoch (UTC): 24 h if zero; whole seconds. Every lookup of a new key
	// probes every partition, so spans are long: a day, or an hour at
	// the most write-heavy sites (the tests use seconds).
	Span time.Duration
	// Ahead is how many spans after the current one KeepPartitions keeps
	// created, so that inserts never wait on it: 2 if zero. A row whose
	// span has no partition (KeepPartitions did not run for that long)
	// goes to the default partition, which is never dropped: Prune
	// deletes its tombstones one by one, as on a plain table.
	Ahead int
	// LockTimeout bounds how long KeepPartitions waits for a lock: to hold
	// the writers of a partition it is about to drop, and to drop it (an
	// exclusive lock on the whole table for the instant of the drop, which
	// every statement on the table queues behind while it waits). A drop
	// that times out is left for the next call. 200 ms if zero.
	LockTimeout time.Duration
}

func (po *PartitionOptions) defaults() error {
	if po.Span == 0 {
		po.Span = 24 * time.Hour
	}
	if po.Ahead == 0 {
		po.Ahead = 2
	}
	if po.LockTimeout == 0 {
		po.LockTimeout = 200 * time.Millisecond
	}
	switch {
	case po.Span < time.Second || po.Span%time.Second != 0 || po.Span > 366*24*time.Hour:
		return fmt.Errorf("pgxstore: partition span %v: whole seconds, from a second to 366 days", po.Span)
	case po.Ahead < 0 || po.Ahead > 1000:
		return fmt.Errorf("pgxstore: partitions ahead %d: between 0 and 1000", po.Ahead)
	case po.LockTimeout < time.Millisecond:
		return fmt.Errorf("pgxstore: partition lock timeout %v: at least a millisecond", po.LockTimeout)
	}
	return nil
}

// spanStart is the start of t's span.
func (po *PartitionOptions) spanStart(t time.Time) time.Time {
	return time.Unix(0, 0).Add(t.Sub(time.Unix(0, 0)).Truncate(po.Span)).UTC()
}

// partitionName is the partition of the span that starts at start: 57
// bytes at most (TableBytesMax + 17), within PostgreSQL's 63.
func partitionName(table string, start time.Time) string {
	return table + "_p" + start.UTC().Format("20060102_150405")
}

// isPartitioned reports whether the table is partitioned (Partition ran).
func isPartitioned(ctx context.Context, q querier, n *names) (bool, error) {
	var kind string
	err := q.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)`, n.qualified).Scan(&kind)
	if err != nil {
		return false, fmt.Errorf("pgxstore: reading the kind of %s: %w", n.qualified, err)
	}
	return kind == "p", nil
}

// Partition turns the table of o, migrated to SchemaVersion, into a table
// partitioned by created_at, in place and keeping every record: the table
// becomes the partition of everything created before the end of the
// current span (named <table>_legacy, dropped by KeepPartitions once the
// core prunes every record in it), beside a default partition and the
// partitions of the next po.Ahead spans. It is idempotent, and safe when
// many instances start at once (Migrate's lock).
//
// Cost: an index of the scope and created_at is built first, without
// blocking writes (CREATE INDEX CONCURRENTLY); then the table is locked
// against every statement while PostgreSQL checks that every row belongs
// to the partition, one scan of the table (0.5 s at a million rows in
// BENCHMARKS.md). Run it in a quiet moment. Stores opened before it
// keep the plain table's statements: restart them (New reads the layout).
// The migrations run on a partitioned table as on a plain one; the
// table's reserve function, which no driver calls, is dropped (on a
// partitioned table its insert would not keep a scope to one row).
func Partition(ctx context.Context, pool *pgxpool.Pool, o Options, po PartitionOptions) error {
	if err := po.defaults(); err != nil {
		return err
	}
	n, err := o.names()
	if err != nil {
		return err
	}
	if v, err := schemaVersion(ctx, pool, n); err != nil {
		return err
	} else if v != SchemaVersion {
		return fmt.Errorf("pgxstore: partition: %s is at schema version %d, not %d: run pgxstore.Migrate first", n.qualified, v, SchemaVersion)
	}
	if done, err := isPartitioned(ctx, pool, n); err != nil || done {
		return err
	}
	// Outside the transaction: built without holding writes off, then
	// taken by the attach as the legacy partition's primary key index.
	cols := "(tenant, principal, use_case, idem_key, created_at)"
	if _, err := pool.Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS `+pgx.Identifier{n.table + "_legacy_key"}.Sanitize()+` ON `+n.qualified+` `+cols); err != nil {
		return fmt.Errorf("pgxstore: partition: building the legacy key: %w", err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgxstore: partition: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after a commit it does nothing
	if err := partitionIn(ctx, tx, n, &po); err != nil {
		return fmt.Errorf("pgxstore: partition: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgxstore: partition: commit: %w", err)
	}
	return nil
}

// partitionIn is Partition's transaction.
func partitionIn(ctx context.Context, tx pgx.Tx, n *names, po *PartitionOptions) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "idem/pgxstore:"+n.qualified); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `SET LOCAL TimeZone = 'UTC'`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+n.qualified+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		return err
	}
	if done, err := isPartitioned(ctx, tx, n); err != nil || done {
		return err // another instance did it while this one waited
	}
	var now time.Time
	var comment string
	if err := tx.QueryRow(ctx, `SELECT statement_timestamp(), obj_description(to_regclass($1), 'pg_class')`, n.qualified).Scan(&now, &comment); err != nil {
		return err
	}
	mark := strings.LastIndex(comment, schemaVersionMark)
	if mark < 0 {
		return errNoVersion
	}
	indexes, err := tableIndexes(ctx, tx, n)
	if err != nil {
		return err
	}
	legacy := n.table + "_legacy"
	cutover := po.spanStart(now).Add(po.Span)
	var ddl []string
	add := func(s string) { ddl = append(ddl, s) }
	add(`ALTER TABLE ` + n.qualified + ` RENAME TO ` + pgx.Identifier{legacy}.Sanitize())
	qualifiedLegacy := n.sibling(legacy)
	for i, ix := range indexes {
		if ix.primary {
			// A partition's primary key is its table's: the legacy key
			// (scope and created_at, built above) takes its place, as a
			// constraint, which the attach then adopts instead of
			// building one. The scope's uniqueness is every insert's lock
			// from now on.
			add(`ALTER TABLE ` + qualifiedLegacy + ` DROP CONSTRAINT ` + pgx.Identifier{ix.name}.Sanitize())
			add(`ALTER TABLE ` + qualifiedLegacy + ` ADD CONSTRAINT ` + pgx.Identifier{legacy + "_pkey"}.Sanitize() + ` PRIMARY KEY USING INDEX ` + pgx.Identifier{n.table + "_legacy_key"}.Sanitize())
		} else if !ix.unique {
			add(`ALTER INDEX ` + n.sibling(ix.name) + ` RENAME TO ` + pgx.Identifier{legacy + "_" + strconv.Itoa(i)}.Sanitize())
		}
	}
	add(`CREATE TABLE ` + n.qualified + ` (LIKE ` + qualifiedLegacy + ` INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING COMMENTS INCLUDING STORAGE) PARTITION BY RANGE (created_at)`)
	add(`ALTER TABLE ` + n.qualified + ` ADD CONSTRAINT ` + pgx.Identifier{n.table + "_pkey"}.Sanitize() + ` PRIMARY KEY (tenant, principal, use_case, idem_key, created_at)`)
	for _, ix := range indexes {
		if !ix.unique { // as it was, on the new table: its definition names the table, which now is the new one
			add(ix.definition)
		}
	}
	add(`ALTER TABLE ` + n.qualified + ` ATTACH PARTITION ` + qualifiedLegacy + ` FOR VALUES FROM (MINVALUE) TO (` + quoteLiteral(cutover.Format(time.RFC3339)) + `)`)
	add(`CREATE TABLE ` + n.sibling(n.table+"_default") + ` PARTITION OF ` + n.qualified + ` DEFAULT`)
	for i := range po.Ahead + 1 {
		add(createPartitionSQL(n, po, cutover.Add(time.Duration(i)*po.Span)))
	}
	add(`DROP FUNCTION IF EXISTS ` + n.sibling(n.table+"_reserve"))
	add(`COMMENT ON TABLE ` + qualifiedLegacy + ` IS 'idem: the records created before the table was partitioned (pgxstore.Partition)'`)
	add(`COMMENT ON TABLE ` + n.qualified + ` IS ` + quoteLiteral("idem idempotency records, partitioned by created_at (pgxstore.Partition); "+comment[mark:]))
	for _, s := range ddl {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// sibling is the quoted name of a relation in the table's schema (the
// table's own, its sequence's, a partition's).
func (n *names) sibling(name string) string {
	if n.schema == "" {
		return pgx.Identifier{name}.Sanitize()
	}
	return pgx.Identifier{n.schema, name}.Sanitize()
}

// createPartitionSQL creates the partition of the span that starts at start.
func createPartitionSQL(n *names, po *PartitionOptions, start time.Time) string {
	return `CREATE TABLE IF NOT EXISTS ` + n.sibling(partitionName(n.table, start)) + ` PARTITION OF ` + n.qualified +
		` FOR VALUES FROM (` + quoteLiteral(start.UTC().Format(time.RFC3339)) + `) TO (` + quoteLiteral(start.Add(po.Span).UTC().Format(time.RFC3339)) + `)`
}

type tableIndex struct {
	name, definition string
	primary, unique  bool
}

// tableIndexes are the table's indexes, with the statements that create
// them.
func tableIndexes(ctx context.Context, q querier, n *names) ([]tableIndex, error) {
	rows, err := q.Query(ctx, `SELECT c.relname, pg_get_indexdef(i.indexrelid), i.indisprimary, i.indisunique
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = to_regclass($1) ORDER BY c.relname`, n.qualified)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []tableIndex
	for rows.Next() {
		var ix tableIndex
		if err := rows.Scan(&ix.name, &ix.definition, &ix.primary, &ix.unique); err != nil {
			return nil, err
		}
		out = append(out, ix)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("the table has no index: not an idem table")
	}
	return out, nil
}
