package pgxstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// ErrAmbiguous is wrapped by every failure after which a write may or may
// not have applied: the connection was lost mid-statement, the statement
// timed out (57014), the server shut down. It is never store.ErrConflict and
// never success: callers load again, and the executor fails closed.
var ErrAmbiguous = errors.New("pgxstore: the outcome of the statement is unknown")

// ErrNotSent is wrapped by a failure that happened before anything was sent
// to the server: the pool could not connect (the dial was refused, the
// server is down), or pgconn says the error came before any byte was
// written (pgconn.SafeToRetry). The store could not answer, so the executor
// fails closed as for any outage, but the write certainly did not apply: it
// is not ErrAmbiguous. (A timeout, pgconn.Timeout, says nothing of that by
// itself: only SafeToRetry does.)
var ErrNotSent = errors.New("pgxstore: the statement was not sent")

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

// rejectedCode reports whether the server rejected a statement for what it
// holds, so that sending it again would be rejected again: a data exception
// (class 22: a value the column cannot hold, a deployment's trigger) or an
// integrity violation (class 23: a constraint), except the unique key
// violation, which is an insert's conflict; or a plain table's insert on a
// table partitioned since (codeNoConflictTarget).
func rejectedCode(code string) bool {
	return len(code) == 5 && (code[:2] == "22" || code[:2] == "23") && code != codeUniqueViolation || code == codeNoConflictTarget
}

// codeNoConflictTarget is a plain table's insert on a table partitioned
// since its Store was opened (onScopeConflict): nothing was written.
const codeNoConflictTarget = "42P10"

// notSent reports whether err certainly came before the statement reached
// the server: a failed connect, or what pgconn marks safe to retry.
func notSent(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || pgconn.SafeToRetry(err)
}

// statementError is a failed statement, classified: it wraps the class's
// sentinel and the cause, and says each once, so that a log line names the
// driver once ("pgxstore: due: outcome unknown: <cause>"); the store's
// caller adds its own layer ("idem/store: due: ").
type statementError struct {
	what  string // the statement: load, insert, update, ...
	class error  // ErrAmbiguous, ErrNotSent, store.ErrRejected or store.ErrConflict
	cause error
}

var classLabels = map[error]string{
	ErrAmbiguous:      "outcome unknown",
	ErrNotSent:        "not sent",
	store.ErrRejected: "rejected by the server (nothing was written)",
	store.ErrConflict: "precondition failed",
}

func (e *statementError) Error() string {
	return "pgxstore: " + e.what + ": " + classLabels[e.class] + ": " + e.cause.Error()
}

func (e *statementError) Unwrap() []error { return []error{e.class, e.cause} }

// contextError is a statement cut short by its caller's context: the
// context's error, as is, so that a caller who went away is not counted as
// a store outage.
type contextError struct {
	what    string
	ctxErr  error
	notSent bool
}

func (e *contextError) Error() string {
	if e.notSent {
		return "pgxstore: " + e.what + ": " + e.ctxErr.Error() + " (nothing was sent)"
	}
	return "pgxstore: " + e.what + ": " + e.ctxErr.Error() + " (the statement may have applied)"
}

func (e *contextError) Unwrap() error { return e.ctxErr }

// classify maps a statement's error for the store's callers:
//   - a unique violation is store.ErrConflict (an insert found a record);
//   - any other data exception or integrity violation (rejectedCode) is
//     store.ErrRejected: the server rejected the statement, which changed
//     nothing, and would reject it again;
//   - the caller's own context ending is its context error, so that a
//     caller who went away is not counted as a store outage (the write may
//     still have applied: it is not a success either);
//   - an error before anything was sent (notSent) is ErrNotSent;
//   - every other error is ambiguous (ErrAmbiguous): the connection died
//     under the statement, or it was cancelled, and a write is never
//     reported as done, nor as failing its precondition, unless the
//     server said so.
//
// A row the driver could not read (core.ErrInvalidRecord) is a bug, not an
// outage: it is returned as it is, named once.
func classify(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, core.ErrInvalidRecord) {
		if strings.HasPrefix(err.Error(), "pgxstore: ") {
			return err
		}
		return fmt.Errorf("pgxstore: %s: %w", what, err)
	}
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, errNotReadCommitted):
		return &statementError{what, store.ErrRejected, err}
	case errors.As(err, &pe) && pe.Code == codeNoConflictTarget:
		return &statementError{what, store.ErrRejected, fmt.Errorf("the table was partitioned after this Store was opened (pgxstore.Partition): open a new Store: %w", err)}
	case pe != nil && pe.Code == codeUniqueViolation:
		return &statementError{what, store.ErrConflict, err}
	case pe != nil && rejectedCode(pe.Code):
		return &statementError{what, store.ErrRejected, err}
	case ctx.Err() != nil:
		return &contextError{what, ctx.Err(), notSent(err)}
	case notSent(err):
		return &statementError{what, ErrNotSent, err}
	}
	return &statementError{what, ErrAmbiguous, err}
}
