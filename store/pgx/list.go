package pgxstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

var _ store.Lister = (*Store)(nil)

// listSQL pages through the records in List's order: the scope compared
// byte by byte (COLLATE "C", as Go compares strings), whatever the
// database's collation. It reads the whole table in the worst case (no
// index is kept for it, which every write would pay): an operator's query.
func listSQL(n *names) string {
	order := `(created_at, tenant COLLATE "C", principal COLLATE "C", use_case COLLATE "C", idem_key COLLATE "C")`
	return `SELECT tenant, principal, use_case, idem_key, ` + recordCols + ` FROM ` + n.qualified + `
		WHERE ($1::text IS NULL OR status = $1)
		AND (NOT $2::bool OR (status = 'unknown' AND reconcile_after IS NULL))
		AND ($3::timestamptz IS NULL OR ` + order + ` > ($3, $4::text COLLATE "C", $5::text COLLATE "C", $6::text COLLATE "C", $7::text COLLATE "C"))
		ORDER BY ` + order[1:len(order)-1] + ` LIMIT $8`
}

// statsSQL counts per status, the abandoned, and each queue's due records
// with the oldest due time, at the statement's clock; the queues' counts
// read the partial indexes Due reads.
func statsSQL(n *names) string {
	t := n.qualified
	return `SELECT statement_timestamp(),
		(SELECT coalesce(jsonb_object_agg(status, c), '{}') FROM (SELECT status, count(*) AS c FROM ` + t + ` GROUP BY status) s),
		(SELECT count(*) FROM ` + t + ` WHERE status = 'unknown' AND reconcile_after IS NULL),
		(SELECT count(*) FROM ` + t + ` WHERE status = 'in_progress' AND locked_until <= statement_timestamp())
		+ (SELECT count(*) FROM ` + t + ` WHERE status IN ('completed', 'failed_retryable', 'expired') AND expires_at <= statement_timestamp()),
		least((SELECT min(locked_until) FROM ` + t + ` WHERE status = 'in_progress' AND locked_until <= statement_timestamp()),
			(SELECT min(expires_at) FROM ` + t + ` WHERE status IN ('completed', 'failed_retryable', 'expired') AND expires_at <= statement_timestamp())),
		(SELECT count(*) FROM ` + t + ` WHERE status = 'unknown' AND reconcile_after IS NOT NULL AND reconcile_after <= statement_timestamp()),
		(SELECT min(reconcile_after) FROM ` + t + ` WHERE status = 'unknown' AND reconcile_after IS NOT NULL AND reconcile_after <= statement_timestamp())`
}

// List returns the records q selects, oldest first (store.Lister).
func (s *Store) List(ctx context.Context, q store.ListQuery) ([]core.Record, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	args := make([]any, 8)
	if q.Status != core.StatusAbsent {
		args[0] = q.Status.String()
	}
	args[1] = q.Abandoned
	if c := q.After; c != nil {
		args[2], args[3], args[4], args[5], args[6] = c.CreatedAt, c.Scope.Tenant, c.Scope.Principal, c.Scope.UseCase, c.Scope.Key
	}
	args[7] = q.Limit
	rows, err := s.pool.Query(ctx, listSQL(s.n), args...)
	if err != nil {
		return nil, classify(ctx, "list", err)
	}
	defer rows.Close()
	var out []core.Record
	var r row
	var sc core.Scope
	dest := r.dest([]any{&sc.Tenant, &sc.Principal, &sc.UseCase, &sc.Key})
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, classify(ctx, "list", err)
		}
		rec := core.Record{Scope: sc}
		if err := r.record(&rec); err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(ctx, "list", err)
	}
	return out, nil
}

// Stats counts the records per status and each queue's backlog, in one
// statement (store.Lister).
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	var now time.Time
	var byStatus map[string]int64
	var st store.Stats
	var oldestSweep, oldestReconcile pgtype.Timestamptz
	err := s.pool.QueryRow(ctx, statsSQL(s.n)).Scan(&now, &byStatus, &st.Abandoned, &st.Sweep.Due, &oldestSweep,
		&st.Reconcile.Due, &oldestReconcile)
	if err != nil {
		return store.Stats{}, classify(ctx, "stats", err)
	}
	st.Now, st.ByStatus = now, map[core.Status]int64{}
	for name, c := range byStatus {
		status, ok := statusByName[name]
		if !ok {
			return store.Stats{}, classify(ctx, "stats", &badStatusError{name})
		}
		st.ByStatus[status] = c
	}
	st.Sweep.OldestDue, st.Reconcile.OldestDue = ts(oldestSweep), ts(oldestReconcile)
	return st, nil
}

// badStatusError is a status the table's CHECK should have refused.
type badStatusError struct{ name string }

func (e *badStatusError) Error() string {
	return "stored status " + e.name + ": " + core.ErrInvalidRecord.Error()
}
func (e *badStatusError) Unwrap() error { return core.ErrInvalidRecord }
