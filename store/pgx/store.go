package pgxstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem/store"
)

// Options configure a Store. The zero value uses the table idem_records in
// the connection's search_path.
type Options struct {
	// Schema holds the table; empty means the first schema of search_path.
	Schema string
	// Table is the records table (idem_records if empty). Its sequence and
	// indexes are named after it. At most TableBytesMax bytes.
	Table string
	// PollInterval bounds how long Wait trusts LISTEN/NOTIFY alone: it loads
	// the record again after a jittered interval of about this much (half to
	// the whole), so that a lost notification only delays a waiter. 1 s if
	// zero; a negative value turns notifications off and polls only (at the
	// interval's absolute value), for measurement.
	PollInterval time.Duration
	// DueClaim, when positive, makes Due claim what it lists for that long:
	// another Store's Due (another instance's sweeper or reconciler) skips
	// those records until then, so that N instances work on disjoint
	// records. Each Store is one instance: its own Due still lists what it
	// claimed (a record it has not handled yet comes back, as without a
	// claim), and rows another transaction holds are skipped (FOR UPDATE
	// SKIP LOCKED). The claim is a hint like Due itself (the worker loads and
	// steps each record again), never part of the record: it bumps no version
	// and wakes no waiter, and a claimed record whose worker died is listed
	// again once the claim ends. Zero (the default) lists without claiming:
	// two instances may then pick the same records, which is correct (each
	// step is a compare-and-set) but wasted work. Set it (a few seconds:
	// longer than a batch takes) when more than one instance runs a sweeper
	// or a reconciler; give each worker of one process its own Store if they
	// must not overlap either.
	DueClaim time.Duration
	// ReadFirst makes every reserve read the record with a plain SELECT by
	// its key first, and send the insert-or-read statement only when there
	// is none: a replay (or a key in flight) is then the cheapest statement
	// PostgreSQL has, and a new key costs one more round trip (three end to
	// end instead of two). Without it (the default) the driver reads first
	// only while about three in four of its recent reserves found a record
	// (readfirst.go): replays cost the plain read under traffic of
	// retries, and new keys two round trips under traffic of new keys. Set
	// it when replays must cost the plain read even while they are a
	// minority of the traffic.
	ReadFirst bool
	// SerializationRetries is how many times a statement that failed with a
	// serialization failure (40001) or a deadlock (40P01), and so changed
	// nothing, is sent again before the error is returned. 3 if zero.
	SerializationRetries int
	// readFirst overrides the default (adaptive) choice of a reserve's
	// first statement when ReadFirst is false: benchmarks measure the
	// insert-or-read alone (readFirstNever) or the plain insert alone
	// (insertFirstAlways), tests take every way in one history
	// (readFirstRandom).
	readFirst readFirstMode
	// unfencedCompletion plants a bug for the chaos harness's self-test:
	// the held path (ApplyHeld: the executor's completion, failure or mark
	// unknown of its attempt) writes the core's step of the held record
	// without its precondition, over whatever the row has become (a
	// heartbeat's version, another attempt). Never set outside tests.
	unfencedCompletion bool
	// partitionInsertUnlocked plants a bug for the partitioning tests: an
	// insert into a partitioned table is sent without the scope's lock
	// (inserts.go). Never set outside tests.
	partitionInsertUnlocked bool
}

// TableBytesMax bounds Options.Table, so that the sequence and index names
// derived from it fit PostgreSQL's 63-byte identifiers.
const TableBytesMax = 40

type names struct {
	schema, table string
	qualified     string // the table, quoted (and qualified when a schema is set)
	sequence      string // the token sequence, quoted and qualified
	audit         string // the audit trail's table (store.Auditor), quoted and qualified
	channel       string // the LISTEN/NOTIFY channel
}

func (o *Options) names() (*names, error) {
	n := &names{schema: o.Schema, table: o.Table}
	if n.table == "" {
		n.table = defaultTable
	}
	for what, v := range map[string]string{"schema": n.schema, "table": n.table} {
		if strings.ContainsRune(v, 0) || !validUTF8(v) {
			return nil, fmt.Errorf("pgxstore: %s name %q: NUL or invalid UTF-8", what, v)
		}
	}
	if len(n.table) > TableBytesMax {
		return nil, fmt.Errorf("pgxstore: table name %q is %d bytes, at most %d", n.table, len(n.table), TableBytesMax)
	}
	if len(n.schema) > 63 {
		return nil, fmt.Errorf("pgxstore: schema name %q is %d bytes, at most 63", n.schema, len(n.schema))
	}
	n.qualified, n.sequence, n.audit = n.sibling(n.table), n.sibling(n.table+"_token_seq"), n.sibling(n.table+"_audit")
	// A channel is an identifier too; a hash keeps it short and free of
	// anything that would need quoting (pg_notify takes it as text).
	n.channel = fmt.Sprintf("idem_%016x", hashStrings(n.schema, n.table))
	return n, nil
}

// Store is the PostgreSQL driver: a store.Store over a *pgxpool.Pool. It
// is also a store.Applier (a new key's reserve and a replay cost one round
// trip) and a store.HeldApplier (the executor's completion of the attempt it
// holds costs one). Create it with New; Close stops its listener.
type Store struct {
	pool   *pgxpool.Pool
	n      *names
	opt    Options
	sql    statements
	listen *listener
	closed sync.Once
	// readFirst and found choose a reserve's first statement (readfirst.go).
	readFirst readFirstMode
	found     foundShare
	// instance tells this Store's Due claims from other instances' (see
	// Options.DueClaim): random, so that two processes never share one.
	instance int64
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Applier     = (*Store)(nil)
	_ store.HeldApplier = (*Store)(nil)
)

// New returns a Store over pool. It checks that the table exists at this
// package's SchemaVersion, and says what to run when it does not.
func New(ctx context.Context, pool *pgxpool.Pool, o Options) (*Store, error) {
	if pool == nil {
		return nil, errors.New("pgxstore: New: nil pool")
	}
	if o.SerializationRetries <= 0 {
		o.SerializationRetries = 3
	}
	if o.PollInterval == 0 {
		o.PollInterval = time.Second
	}
	n, err := o.names()
	if err != nil {
		return nil, err
	}
	v, err := schemaVersion(ctx, pool, n)
	if err != nil {
		return nil, err
	}
	switch {
	case v == 0:
		return nil, fmt.Errorf("pgxstore: table %s does not exist: run pgxstore.Migrate(ctx, pool, opts) first, or apply the migrations of store/pgx/migrations with your migration tool", n.qualified)
	case v < SchemaVersion:
		return nil, fmt.Errorf("pgxstore: table %s is at schema version %d, this package needs %d: run pgxstore.Migrate(ctx, pool, opts), or apply migrations %04d..%04d of store/pgx/migrations", n.qualified, v, SchemaVersion, v+1, SchemaVersion)
	case v > SchemaVersion:
		return nil, fmt.Errorf("pgxstore: table %s is at schema version %d, newer than this package's %d: upgrade github.com/idemkit/idem", n.qualified, v, SchemaVersion)
	}
	partitioned, err := isPartitioned(ctx, pool, n)
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool, n: n, opt: o, sql: newStatements(n, partitioned), instance: int64(rand.Uint64() >> 1), readFirst: o.readFirst}
	if o.ReadFirst {
		s.readFirst = readFirstAlways
	}
	if o.PollInterval > 0 {
		s.listen = newListener(pool, n.channel)
	}
	return s, nil
}

// Close stops the listening connection. It does not close the pool, which
// is the caller's.
func (s *Store) Close() {
	s.closed.Do(func() {
		if s.listen != nil {
			s.listen.close()
		}
	})
}

// querier is what the Store's statements run on: the pool, or a caller's
// transaction (WithTx).
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}
