package pgxstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemkit/idem/store"
)

// ErrAmbiguous is wrapped by every failure after which a write may or may
// not have applied: the connection was lost mid-statement, the statement
// timed out (57014), the server shut down. It is never store.ErrConflict and
// never success: callers load again, and the executor fails closed.
var ErrAmbiguous = errors.New("pgxstore: the outcome of the statement is unknown")

// SQLSTATE codes the driver tells apart.
const (
	codeUniqueViolation      = "23505"
	codeSerializationFailure = "40001"
	codeDeadlock             = "40P01"
	codeQueryCanceled        = "57014"
)

// retryable reports whether err is a statement that PostgreSQL rolled back
// as a whole because of other transactions (a serialization failure or a
// deadlock): nothing was written, and sending it again is safe.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == codeSerializationFailure || pe.Code == codeDeadlock)
}

// classify maps a statement's error for the store's callers:
//   - a unique violation is store.ErrConflict (an insert found a record);
//   - the caller's own context ending is its context error, as is, so that
//     a caller who went away is not counted as a store outage (the write
//     may still have applied: it is not a success either);
//   - every other error is ambiguous (ErrAmbiguous), whether the server
//     refused the statement or the connection died under it: a write is
//     never reported as done, nor as refused by its precondition, unless
//     the server said so.
func classify(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == codeUniqueViolation {
		return fmt.Errorf("pgxstore: %s: %w (%s)", what, store.ErrConflict, pe.ConstraintName)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("pgxstore: %s: %w (the statement may have applied)", what, ctxErr)
	}
	return fmt.Errorf("pgxstore: %s: %w: %w", what, ErrAmbiguous, err)
}
