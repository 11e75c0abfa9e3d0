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
// A new key costs two round trips end to end: the reserve is one plain
// INSERT of the record (a replay is one statement too: a primary-key read,
// no lock, no sequence), and the executor's completion of the attempt it
// holds is one fenced UPDATE (store.HeldApplier). Which statement a reserve
// sends first follows its traffic (see Replays): a guess that turns out
// wrong (a record found by the insert, a new key by the read) costs one
// more round trip. A completion whose precondition no longer holds (the
// record moved on) costs two more: it loads and writes. A reserve that must
// write over an existing record (a retry after a failure, a key reused
// after expiry) loads it again for a fresh token: two more. Statements
// compute the database's clock and the token in SQL; the driver then checks
// the row it got back against core.Step, and reports any difference as a
// driver bug.
//
// # Pool size
//
// Every request holds a pooled connection for each of its statements, and
// pgxpool's default MaxConns is max(4, NumCPU): at more concurrent requests
// than that, requests queue for a connection in the client, not in the
// database. Size the pool to the requests a service runs at once (the
// benchmarks use one connection per client, as pgbench does), within the
// server's max_connections over all instances. Statements are fixed text
// per table, so pgx prepares each once per connection and caches it.
//
// # Notifications
//
// Wait is woken by LISTEN/NOTIFY, but a write notifies only when a Wait
// marked its row (a flag outside the record) since the row's last write:
// PostgreSQL serialises the commits of all notifying transactions, so a
// NOTIFY on every write would cap the database at one commit per WAL flush.
// A Wait on an absent record, or whose notification was lost, is served by
// its poll (Options.PollInterval).
//
// # Background work
//
// Due reads partial indexes, so a batch costs about the batch. With
// Options.DueClaim several instances' sweepers and reconcilers work on
// disjoint records. Store.Prune deletes tombstones past their retention in
// bounded batches (one statement, rows held by others skipped, each deleted
// row checked against core.Step before the commit), far cheaper than the
// sweeper's delete of each; a service runs it in a loop beside its Sweeper.
//
// # Time partitioning
//
// Where deleting expired rows is most of the database's work, Partition
// turns the table into one partitioned by range of created_at (a day a
// partition by default), in place, keeping every record, and
// KeepPartitions, run in a loop beside Prune, creates the partitions ahead
// and drops a past day whole once the core prunes every record in it (it
// reads and steps each first: the core still decides). A dropped day
// costs a read of its rows and one DROP TABLE instead of a DELETE each and
// the vacuum after it (BENCHMARKS.md, "time partitioning"). The price: a
// lookup by scope probes every partition it cannot rule out, and, since
// PostgreSQL requires the partition key in every unique index, the scope's
// uniqueness no longer rests on the primary key: every insert takes the
// scope's advisory lock and looks for its row first, in one batch (one
// round trip), and needs READ COMMITTED (the default) in a caller's
// transaction. The Node store (wasm/js) refuses a partitioned table.
//
// # Replays
//
// A replay is one round trip either way, but the insert-or-read statement
// costs PostgreSQL and the client much more than a plain SELECT by key, and
// a new key's plain INSERT much less than the insert-or-read. So the driver
// reads first while most of its recent reserves found a record (traffic of
// retries), inserts first while almost none did (traffic of new keys, which
// a read would cost a round trip each), and sends the insert-or-read in
// between. Options.ReadFirst reads first always.
//
// # Time and tokens
//
// Every lifecycle time is the database's statement_timestamp(), never the
// host's. Fencing tokens come from one sequence per table, so they never
// repeat for a scope, across deletes, pruning and instances. The sequence
// has gaps: every Load and every reserve of a new key takes a value whether
// or not it is used, and values taken by rolled-back statements are lost. Gaps are
// harmless (tokens need only grow), but they mean tokens count loads, not
// attempts. Never reset or recreate the sequence while clients may hold
// tokens.
//
// # Errors
//
// A unique violation is store.ErrConflict; a serialization failure or a
// deadlock is retried (Options.SerializationRetries); any other data
// exception (SQLSTATE class 22) or integrity violation (class 23: a
// constraint or trigger a deployment added) is store.ErrRejected, since the
// server rejected the statement and nothing was written; a connection that
// could not be made wraps ErrNotSent (an outage, but nothing was sent); a
// connection lost mid-statement or a statement timeout wraps ErrAmbiguous
// (never ErrConflict, never success); the caller's cancelled context is its
// context error. Each names the driver and the statement once:
// "pgxstore: update: outcome unknown: <cause>". New refuses a missing or
// outdated table and says what to run.
//
// # Values
//
// Every value the core accepts is stored byte for byte: header values,
// which RFC 9110 lets carry obs-text (bytes 0x80..0xFF, not UTF-8), are
// bytea (migration 0003), like bodies and fingerprints; what stays text
// (the scope, header names, error codes, the status) is held by the core to
// alphabets that text keeps as they are in a UTF8 database (PostgreSQL's
// default; another encoding rejects what it cannot hold, as ErrRejected).
// The conformance suite stores every byte of each alphabet through every
// write path.
package pgxstore
