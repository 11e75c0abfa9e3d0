// Package pgxstore is the PostgreSQL driver of idem (store/pgx), over a
// github.com/jackc/pgx/v5 *pgxpool.Pool. It keeps no lifecycle logic: it
// loads, writes what core.Step decided under a (version, token)
// precondition, wakes waiters with LISTEN/NOTIFY and lists due records from
// partial indexes.
//
// # Setting up
//
//	pool, _ := pgxpool.New(ctx, dsn)
//	if err := pgxstore.Migrate(ctx, pool, pgxstore.Options{}); err != nil { ... }
//	s, err := pgxstore.New(ctx, pool, pgxstore.Options{})
//	defer s.Close()
//	ex, err := idem.New(s)
//
// The migrations are also embedded as golang-migrate files (Migrations), for
// a service that runs its own migration tool; Migrate is safe when many
// instances start at once (a transaction-level advisory lock). Table and
// schema names are configurable (Options) and always quoted.
//
// # Round trips
//
// A new key costs two round trips end to end: the reserve is one statement
// that inserts the record or reads the existing one (a replay is that one
// statement), and the executor's completion of the attempt it holds is one
// fenced UPDATE (store.HeldApplier). A lost race costs one more. Statements
// compute the database's clock and the token in SQL; the driver then checks
// the row it got back against core.Step, and reports any difference as a
// driver bug.
//
// # Time and tokens
//
// Every lifecycle time is the database's statement_timestamp(), never the
// host's. Fencing tokens come from one sequence per table, so they never
// repeat for a scope, across deletes, pruning and instances. The sequence
// has gaps: every Load and every reserve takes a value whether or not it is
// used, and values taken by rolled-back statements are lost. Gaps are
// harmless (tokens need only grow), but they mean tokens count loads, not
// attempts. Never reset or recreate the sequence while clients may hold
// tokens.
//
// # Errors
//
// A unique violation is store.ErrConflict; a serialization failure or a
// deadlock is retried (Options.SerializationRetries); a connection lost
// mid-statement or a statement timeout wraps ErrAmbiguous (never
// ErrConflict, never success); the caller's cancelled context is its context
// error. New refuses a missing or outdated table and says what to run.
package pgxstore
