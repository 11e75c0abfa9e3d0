package pgxstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemkit/idem/core"
)

// PartitionReport is what one KeepPartitions did.
type PartitionReport struct {
	Created        []string        // partitions created ahead
	Dropped        []string        // past partitions dropped, every record in them pruned
	DroppedRecords int             // the records they held
	Held           []HeldPartition // past partitions kept, and why
}

// HeldPartition is a past partition KeepPartitions did not drop.
type HeldPartition struct {
	Name string
	Why  string // a record the core does not prune yet, or a lock not granted in time
}

// codeLockNotAvailable is lock_timeout's error.
const codeLockNotAvailable = "55P03"

// KeepPartitions is a partitioned table's upkeep (Partition), run in a loop
// beside Prune and the Sweeper (every few minutes is plenty): it creates the
// partitions of the current span and po.Ahead spans after it, then drops
// each past partition (its whole span before the database's now) in which
// the core prunes every record, oldest first.
//
// The core decides, as for Prune: holding the partition's writers off
// (LOCK … IN SHARE MODE: reads go on), it reads every row and steps each
// with core.EventSweep at the database's time; one record that the step
// does not prune (a completed record within its TTL, an expired one within
// its retention, anything in progress or unknown) keeps the partition, and
// the sweeper and Prune deal with its records one by one as on a plain
// table. Then it drops the partition, waking the waiters of its rows, in
// the same transaction. Tombstones of a past span cannot change under the
// lock but by the statements it holds off (a prune, a new incarnation,
// which moves the row out), so what was stepped is what is dropped.
func (s *Store) KeepPartitions(ctx context.Context, p *core.Policy, po PartitionOptions) (PartitionReport, error) {
	var rep PartitionReport
	if err := po.defaults(); err != nil {
		return rep, err
	}
	if !s.sql.partitioned {
		return rep, fmt.Errorf("pgxstore: keep partitions: %s is not partitioned (pgxstore.Partition), or was partitioned after this Store was opened", s.n.qualified)
	}
	if p == nil {
		d := core.PolicyDefault()
		p = &d
	}
	parts, now, err := s.partitions(ctx)
	if err != nil {
		return rep, classify(ctx, "keep partitions", err)
	}
	var errs []error
	for i := range po.Ahead + 1 {
		start := po.spanStart(now).Add(time.Duration(i) * po.Span)
		name := partitionName(s.n.table, start)
		if covered(parts, start, start.Add(po.Span)) {
			continue
		}
		if _, err := s.pool.Exec(ctx, createPartitionSQL(s.n, &po, start)); err != nil {
			errs = append(errs, classify(ctx, "create partition "+name, err))
			continue
		}
		rep.Created = append(rep.Created, name)
	}
	for _, pt := range parts {
		if pt.isDefault || pt.to.IsZero() || pt.to.After(now) {
			continue
		}
		rows, why, err := s.dropIfPruned(ctx, p, pt.name, &po)
		switch {
		case err != nil:
			errs = append(errs, classify(ctx, "drop partition "+pt.name, err))
		case why != "":
			rep.Held = append(rep.Held, HeldPartition{Name: pt.name, Why: why})
		default:
			rep.Dropped = append(rep.Dropped, pt.name)
			rep.DroppedRecords += rows
		}
	}
	return rep, errors.Join(errs...)
}

// partition is one partition of the table: its span [from, to) (from zero
// for the legacy partition), or the default one.
type partition struct {
	name      string
	isDefault bool
	from, to  time.Time
}

// partitions lists the table's partitions, oldest first (the default one
// last), and the database's time.
func (s *Store) partitions(ctx context.Context) ([]partition, time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.relname, b = 'DEFAULT',
			(regexp_match(b, 'FROM \(''([^'']+)''\)'))[1]::timestamptz, (regexp_match(b, 'TO \(''([^'']+)''\)'))[1]::timestamptz,
			statement_timestamp()
		FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid, LATERAL pg_get_expr(c.relpartbound, c.oid) AS b
		WHERE i.inhparent = to_regclass($1)
		ORDER BY b = 'DEFAULT', 3 NULLS FIRST`, s.n.qualified)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer rows.Close()
	var out []partition
	var now time.Time
	for rows.Next() {
		var pt partition
		var from, to *time.Time
		if err := rows.Scan(&pt.name, &pt.isDefault, &from, &to, &now); err != nil {
			return nil, time.Time{}, err
		}
		if from != nil {
			pt.from = from.UTC()
		}
		if to != nil {
			pt.to = to.UTC()
		}
		out = append(out, pt)
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, err
	}
	if now.IsZero() { // no partition at all: a partitioned table still has a clock
		err = s.pool.QueryRow(ctx, `SELECT statement_timestamp()`).Scan(&now)
	}
	return out, now.UTC(), err
}

// covered reports whether a partition of parts overlaps [from, to): the
// span's own, the legacy partition's end, or one of another span's length.
func covered(parts []partition, from, to time.Time) bool {
	for _, pt := range parts {
		if !pt.isDefault && !pt.to.IsZero() && pt.to.After(from) && pt.from.Before(to) {
			return true
		}
	}
	return false
}

// dropIfPruned drops the partition name if the core prunes every record in
// it (KeepPartitions), and says how many it held; why says what kept it.
func (s *Store) dropIfPruned(ctx context.Context, p *core.Policy, name string, po *PartitionOptions) (rows int, why string, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, "", err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after a commit it does nothing
	part := s.n.sibling(name)
	if _, err := tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, fmt.Sprintf("%dms", po.LockTimeout.Milliseconds())); err != nil {
		return 0, "", err
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+part+` IN SHARE MODE`); err != nil {
		why, err := lockWhy(err, "its writers")
		return 0, why, err
	}
	wake, rows, why, err := s.stepPartition(ctx, tx, p, part)
	if err != nil || why != "" {
		return 0, why, err
	}
	if _, err := tx.Exec(ctx, `DROP TABLE `+part); err != nil {
		why, err := lockWhy(err, "the table, to drop it")
		return 0, why, err
	}
	if len(wake) > 0 {
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, w) FROM unnest($2::text[]) AS w`, s.n.channel, wake); err != nil {
			return 0, "", err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, "", err
	}
	return rows, "", nil
}

// lockWhy turns a lock timeout into a reason to hold the partition for now.
func lockWhy(err error, what string) (string, error) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == codeLockNotAvailable {
		return "the lock on " + what + " was not granted in time: left for the next call", nil
	}
	return "", err
}

// stepPartition reads every row of part and steps each with a sweep at the
// database's time: why names the first the core does not prune; wake are
// the notifications of the rows a Wait marked.
func (s *Store) stepPartition(ctx context.Context, tx pgx.Tx, p *core.Policy, part string) (wake []string, n int, why string, err error) {
	// A record that is not a tombstone is never pruned: one costs no scan.
	var sc core.Scope
	var status string
	err = tx.QueryRow(ctx, `SELECT tenant, principal, use_case, idem_key, status FROM `+part+` WHERE status <> 'expired' LIMIT 1`).
		Scan(&sc.Tenant, &sc.Principal, &sc.UseCase, &sc.Key, &status)
	if err == nil {
		return nil, 0, fmt.Sprintf("%s is %s", sc, status), nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, "", err
	}
	rows, err := tx.Query(ctx, `SELECT statement_timestamp(), tenant, principal, use_case, idem_key, waiters, `+recordCols+` FROM `+part)
	if err != nil {
		return nil, 0, "", err
	}
	defer rows.Close()
	var (
		now     time.Time
		waiters bool
		r       row
	)
	dest := r.dest([]any{&now, &sc.Tenant, &sc.Principal, &sc.UseCase, &sc.Key, &waiters})
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, "", err
		}
		rec := core.Record{Scope: sc}
		if err := r.record(&rec); err != nil {
			return nil, 0, "", err
		}
		if d := sweepDecision(&rec, p, now.UTC()); d != core.DecisionPruned {
			return nil, 0, fmt.Sprintf("%s: a sweep at %v is %v, not a prune", rec.Describe(), now.UTC().Format(time.RFC3339Nano), d), nil
		}
		n++
		if waiters {
			wake = append(wake, notifyPayload(&sc))
		}
	}
	return wake, n, "", rows.Err()
}
