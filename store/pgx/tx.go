package pgxstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// TxStore is a Store bound to a caller's transaction: every statement runs
// in tx, so that a business write and the completion of its attempt commit
// together, or neither does (see Attempt.CompleteIn and the example). The
// completion is fenced like any write: if the attempt lost its token
// meanwhile, the core answers stale, CompleteIn fails, and the caller rolls
// back. Its row lock is held until tx ends, and so is the lock each of its
// Loads takes on the scope (the load function's advisory lock, which every
// other Load of the scope waits for, a sweeper's or a reconciler's among
// them): keep the transaction short.
type TxStore struct {
	s  *Store
	tx pgx.Tx
}

var (
	_ store.Store   = (*TxStore)(nil)
	_ store.Applier = (*TxStore)(nil)
)

// WithTx returns the Store bound to tx. Statements are never retried in it
// (a failed statement aborts the transaction).
func (s *Store) WithTx(tx pgx.Tx) *TxStore { return &TxStore{s: s, tx: tx} }

func (t *TxStore) ops() ops { return ops{s: t.s, q: t.tx, tx: true} }

// Load implements store.Store.
func (t *TxStore) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	return t.ops().load(ctx, scope)
}

// Insert implements store.Store.
func (t *TxStore) Insert(ctx context.Context, rec *core.Record) error {
	return t.ops().insert(ctx, rec)
}

// CompareAndSet implements store.Store.
func (t *TxStore) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, tok core.Token) error {
	return t.ops().compareAndSet(ctx, rec, v, tok)
}

// Delete implements store.Store.
func (t *TxStore) Delete(ctx context.Context, scope core.Scope, v uint64, tok core.Token) error {
	return t.ops().delete(ctx, scope, v, tok)
}

// Due implements store.Store.
func (t *TxStore) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	return t.ops().due(ctx, kind, limit)
}

// Wait implements store.Store on the Store's own connections: what it
// waits for is other transactions' writes.
func (t *TxStore) Wait(ctx context.Context, scope core.Scope, version uint64, token core.Token) error {
	return t.s.Wait(ctx, scope, version, token)
}

// Apply implements store.Applier, in the transaction.
func (t *TxStore) Apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
	return t.ops().apply(ctx, scope, ev, p, out)
}
