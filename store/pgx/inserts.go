package pgxstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/core"
)

// On a partitioned table (partition.go) the primary key includes
// created_at, so it no longer keeps a scope to one row, and every insert
// keeps it instead: the scope's advisory lock (lockScopeSQL, the load
// function's lock), then the insert, which writes only when no partition
// holds a row of the scope (absentOnly), in one batch: one round trip and
// one implicit transaction, so the lock is held until the insert commits,
// and the insert's snapshot, taken after the lock was granted, sees every
// insert of the scope committed before it. In a caller's transaction the
// lock is held to its end. On a plain table an insert is sent alone, and
// the primary key refuses a second row.

// errNotReadCommitted refuses an insert into a partitioned table in a
// transaction that is not READ COMMITTED: its snapshot could miss a row of
// the scope another transaction committed, and nothing else would stop a
// second row. Nothing was written: classify reports it as
// store.ErrRejected.
var errNotReadCommitted = errors.New("an insert into a partitioned table needs a READ COMMITTED transaction (the snapshot of each statement must follow the scope's lock)")

// insertRow runs the insert st (its arguments args) for scope and scans
// its row into dest; pgx.ErrNoRows when it wrote nothing.
func (o ops) insertRow(ctx context.Context, scope *core.Scope, st *statement, args []any, dest []any) error {
	if !o.lockInserts() {
		return o.q.QueryRow(ctx, st.sql, args...).Scan(dest...)
	}
	return o.locked(ctx, scope, st, args, func(br pgx.BatchResults) error { return br.QueryRow().Scan(dest...) })
}

// insertExec runs the insert st (its arguments args) for scope; inserted
// is false when it wrote nothing (a partitioned table's scope had a row).
func (o ops) insertExec(ctx context.Context, scope *core.Scope, st *statement, args []any) (inserted bool, err error) {
	if !o.lockInserts() {
		tag, err := o.q.Exec(ctx, st.sql, args...)
		return err == nil && tag.RowsAffected() == 1, err
	}
	err = o.locked(ctx, scope, st, args, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		inserted = err == nil && tag.RowsAffected() == 1
		return err
	})
	return inserted, err
}

// lockInserts is whether inserts take the scope's lock: on a partitioned
// table (but for the tests' planted bug).
func (o ops) lockInserts() bool { return o.s.sql.partitioned && !o.s.opt.partitionInsertUnlocked }

// locked sends the scope's lock and st in one batch; read reads st's result.
func (o ops) locked(ctx context.Context, scope *core.Scope, st *statement, args []any, read func(pgx.BatchResults) error) error {
	var v argv
	b := &pgx.Batch{}
	b.Queue(o.s.sql.lockScope.sql, o.s.sql.lockScope.args(v.scope(scope.Tenant, scope.Principal, scope.UseCase, scope.Key))...)
	b.Queue(st.sql, args...)
	br := o.q.SendBatch(ctx, b)
	var isolation string
	err := br.QueryRow().Scan(&isolation)
	if err == nil {
		err = read(br)
	}
	if cerr := br.Close(); cerr != nil && (err == nil || errors.Is(err, pgx.ErrNoRows)) {
		err = cerr // the commit failed: what the insert did is not known
	}
	if (err == nil || errors.Is(err, pgx.ErrNoRows)) && isolation != "read committed" {
		return errNotReadCommitted // the insert's own condition kept it from writing
	}
	return err
}
