package pgxstore

import (
	"context"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

func (s *Store) ops() ops { return ops{s: s, q: s.pool} }

// Load implements store.Store: one statement reads the record, the
// database's clock and the next value of the token sequence.
func (s *Store) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	return s.ops().load(ctx, scope)
}

// Insert implements store.Store; a unique violation is store.ErrConflict.
func (s *Store) Insert(ctx context.Context, rec *core.Record) error {
	return s.ops().insert(ctx, rec)
}

// CompareAndSet implements store.Store.
func (s *Store) CompareAndSet(ctx context.Context, rec *core.Record, expectVersion uint64, expectToken core.Token) error {
	return s.ops().compareAndSet(ctx, rec, expectVersion, expectToken)
}

// Delete implements store.Store. The token sequence is not touched: later
// fresh tokens stay greater than the deleted record's.
func (s *Store) Delete(ctx context.Context, scope core.Scope, expectVersion uint64, expectToken core.Token) error {
	return s.ops().delete(ctx, scope, expectVersion, expectToken)
}

// Due implements store.Store from the partial indexes of the migrations,
// most overdue first. With Options.DueClaim it also claims what it lists.
func (s *Store) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	return s.ops().due(ctx, kind, limit)
}
