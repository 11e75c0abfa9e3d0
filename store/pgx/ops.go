package pgxstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// ops runs the store's statements on q: the pool, or a caller's transaction.
type ops struct {
	s  *Store
	q  querier
	tx bool // in a caller's transaction: an error aborts it, so nothing is retried
}

// run calls f, again after a serialization failure or a deadlock (which
// PostgreSQL rolled back whole) up to the configured bound; never inside a
// caller's transaction, which such an error has aborted.
func (o ops) run(ctx context.Context, f func() error) error {
	err := f()
	for i := 0; err != nil && !o.tx && i < o.s.opt.SerializationRetries && retryable(err) && ctx.Err() == nil; i++ {
		err = f()
	}
	return err
}

func (o ops) load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	var snap store.Snapshot
	var r row
	var now time.Time
	var tok int64
	dest := r.dest(append(make([]any, 0, 18), &now, &tok))
	err := o.run(ctx, func() error {
		var v argv
		return o.q.QueryRow(ctx, o.s.sql.load.sql, o.s.sql.load.args(v.scope(scope.Tenant, scope.Principal, scope.UseCase, scope.Key))...).Scan(dest...)
	})
	if err != nil {
		return snap, classify(ctx, "load", err)
	}
	snap.Record.Scope = scope
	if err := r.record(&snap.Record); err != nil {
		return store.Snapshot{}, err
	}
	snap.Now, snap.FreshToken = now.UTC(), core.Token(tok)
	return snap, nil
}

// notifyArgs sets the arguments of the notification a write to scope's
// row sends if it has waiters.
func (o ops) notifyArgs(v *argv, scope *core.Scope) {
	v[pChannel], v[pPayload] = o.s.n.channel, notifyPayload(scope)
}

func (o ops) insert(ctx context.Context, rec *core.Record) error {
	if rec == nil {
		return fmt.Errorf("pgxstore: insert: no record: %w", core.ErrInvalidRecord)
	}
	w := literalWrite(rec)
	var v argv
	args := o.s.sql.insert.args(w.fill(&v, int64(rec.Token)))
	var inserted bool
	err := o.run(ctx, func() error {
		var err error
		inserted, err = o.insertExec(ctx, &rec.Scope, &o.s.sql.insert, args)
		return err
	})
	if err == nil && !inserted {
		// The scope has a row: ON CONFLICT on a plain table, absentOnly
		// on a partitioned one.
		return fmt.Errorf("pgxstore: insert %s: %w", rec.Scope, store.ErrConflict)
	}
	return classify(ctx, "insert", err)
}

// update writes w under the (version, token) precondition and returns the
// statement's time and the row as written (in got). When the precondition
// did not hold, nothing was written and ok is false. expectCreated, when
// not zero, is the created_at of the record the precondition names (on a
// partitioned table, the partition it is in).
func (o ops) update(ctx context.Context, w *write, expectVersion uint64, expectToken core.Token, expectCreated time.Time, got *core.Record, unfenced bool) (now time.Time, ok bool, err error) {
	var v argv
	o.notifyArgs(w.fill(&v, int64(w.rec.Token)), &w.rec.Scope)
	v[pExpectVersion], v[pExpectToken] = int64(expectVersion), int64(expectToken)
	st := &o.s.sql.update
	switch {
	case unfenced:
		st = &o.s.sql.unfencedUpdate // the planted bug: no precondition
	case !expectCreated.IsZero() && o.s.sql.partitioned:
		st, v[pExpectCreatedAt] = &o.s.sql.updateIn, expectCreated
	}
	sql, args := st.sql, st.args(&v)
	var r row
	dest := r.dest(append(make([]any, 0, 17), &now))
	err = o.run(ctx, func() error { return o.q.QueryRow(ctx, sql, args...).Scan(dest...) })
	got.Scope = w.rec.Scope
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, classify(ctx, "update", err)
	}
	return now.UTC(), true, r.record(got)
}

func (o ops) compareAndSet(ctx context.Context, rec *core.Record, expectVersion uint64, expectToken core.Token) error {
	if rec == nil {
		return fmt.Errorf("pgxstore: compare-and-set: no record: %w", core.ErrInvalidRecord)
	}
	w := literalWrite(rec)
	var got core.Record
	_, ok, err := o.update(ctx, &w, expectVersion, expectToken, time.Time{}, &got, false)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("pgxstore: compare-and-set %s: %w", rec.Scope, store.ErrConflict)
	}
	return nil
}

func (o ops) delete(ctx context.Context, scope core.Scope, expectVersion uint64, expectToken core.Token) error {
	var f bool
	var v argv
	o.notifyArgs(v.scope(scope.Tenant, scope.Principal, scope.UseCase, scope.Key), &scope)
	v[pExpectVersion], v[pExpectToken] = int64(expectVersion), int64(expectToken)
	args := o.s.sql.delete.args(&v)
	err := o.run(ctx, func() error { return o.q.QueryRow(ctx, o.s.sql.delete.sql, args...).Scan(&f) })
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("pgxstore: delete %s: %w", scope, store.ErrConflict)
	}
	return classify(ctx, "delete", err)
}

func (o ops) due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	if limit <= 0 {
		return nil, nil
	}
	var st *statement
	claim := o.s.opt.DueClaim > 0
	switch {
	case kind == store.DueSweep && claim:
		st = &o.s.sql.claimSweep
	case kind == store.DueSweep:
		st = &o.s.sql.dueSweep
	case kind == store.DueReconcile && claim:
		st = &o.s.sql.claimReconcile
	case kind == store.DueReconcile:
		st = &o.s.sql.dueReconcile
	default:
		return nil, fmt.Errorf("pgxstore: due: %v is not a kind of due record", kind)
	}
	var v argv
	v[pLimit] = limit
	v[pClaimFor], v[pInstance] = pgtype.Interval{Microseconds: o.s.opt.DueClaim.Microseconds(), Valid: true}, o.s.instance
	sql, args := st.sql, st.args(&v)
	var out []core.Record
	err := o.run(ctx, func() error {
		out = out[:0]
		rows, err := o.q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var r row
		var sc core.Scope
		dest := r.dest([]any{&sc.Tenant, &sc.Principal, &sc.UseCase, &sc.Key})
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			rec := core.Record{Scope: sc}
			if err := r.record(&rec); err != nil {
				return err
			}
			out = append(out, rec)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, classify(ctx, "due", err)
	}
	return out, nil
}

// waitMark reports whether scope's record still has version and token,
// and if so marks its row, so that the row's next write notifies.
func (o ops) waitMark(ctx context.Context, scope core.Scope, version uint64, token core.Token) (unchanged bool, err error) {
	var v argv
	v.scope(scope.Tenant, scope.Principal, scope.UseCase, scope.Key)
	v[pExpectVersion], v[pExpectToken] = int64(version), int64(token)
	err = o.q.QueryRow(ctx, o.s.sql.waitMark.sql, o.s.sql.waitMark.args(&v)...).Scan(&unchanged)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, classify(ctx, "wait", err)
	}
	return unchanged, nil
}

// plain is the Store view of ops that store.Op drives: the load, step and
// compare-and-set path.
type plain struct{ o ops }

func (p plain) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	return p.o.load(ctx, scope)
}
func (p plain) Insert(ctx context.Context, rec *core.Record) error { return p.o.insert(ctx, rec) }
func (p plain) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, t core.Token) error {
	return p.o.compareAndSet(ctx, rec, v, t)
}
func (p plain) Delete(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	return p.o.delete(ctx, scope, v, t)
}
func (p plain) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	return p.o.due(ctx, kind, limit)
}
func (p plain) Wait(ctx context.Context, scope core.Scope, version uint64, token core.Token) error {
	return p.o.s.Wait(ctx, scope, version, token)
}
