package pgxstore

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestSerializationFailureInACallersTransaction: a statement of a TxStore is
// never sent again (WithTx): a serialization failure aborts the caller's
// transaction, and the caller gets it (40001) to retry its whole
// transaction, not the error of a retry inside the aborted one (25P02).
func TestSerializationFailureInACallersTransaction(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{PollInterval: -1})
	ctx := context.Background()
	rec := reserved(t, s, testScope("tx-serialization"))
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	ts := s.WithTx(tx)
	snap, err := ts.Load(ctx, rec.Scope) // the transaction's snapshot
	if err != nil {
		t.Fatal(err)
	}
	other := rec
	other.Version++
	if err := s.CompareAndSet(ctx, &other, rec.Version, rec.Token); err != nil { // another writer, after the snapshot
		t.Fatal(err)
	}
	mine := snap.Record
	mine.Version++
	err = ts.CompareAndSet(ctx, &mine, snap.Record.Version, snap.Record.Token)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != codeSerializationFailure {
		t.Fatalf("a compare-and-set over a row updated since the transaction's snapshot: %v, want the serialization failure (40001) itself", err)
	}
}
