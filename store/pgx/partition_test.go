package pgxstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	"github.com/idemkit/idem/store/storetest"
)

// newPartitionedStore migrates o (in the test's schema), partitions it
// with po and returns its Store, closed at the end.
func (db *testDB) newPartitionedStore(t testing.TB, o Options, po PartitionOptions) *Store {
	t.Helper()
	ctx := context.Background()
	o.Schema = db.schema
	if err := Migrate(ctx, db.pool, o); err != nil {
		t.Fatal(err)
	}
	if err := Partition(ctx, db.pool, o, po); err != nil {
		t.Fatal(err)
	}
	s, err := New(ctx, db.pool, o)
	if err != nil {
		t.Fatal(err)
	}
	if !s.sql.partitioned {
		t.Fatal("New did not see the partitioned table")
	}
	t.Cleanup(s.Close)
	return s
}

// TestConformancePartitioned runs the driver suite over partitioned
// tables (a reserve's way drawn per call, so that every insert path runs
// under the suite's concurrent histories), with spans of a few seconds:
// the suite's records are created across several partitions, and new
// incarnations move between them.
func TestConformancePartitioned(t *testing.T) {
	db := newTestDB(t)
	n := 0
	storetest.RunStoreSuite(t,
		func(t *testing.T) store.Store {
			n++
			o := Options{Table: "records_" + itoa(n), PollInterval: 50 * time.Millisecond, readFirst: readFirstRandom}
			return db.newPartitionedStore(t, o, PartitionOptions{Span: 3 * time.Second, Ahead: 3})
		},
		storetest.WithTimeResolution(time.Microsecond),
		storetest.WithRealLease(300*time.Millisecond),
		storetest.WithHistories(2),
	)
}

// TestPartitionedInsertsKeepOneRow: reserves of one new key sent at once,
// by every way a reserve inserts, into a partitioned table, whose primary
// key no longer keeps a scope to one row: one executes, every other one
// answers in flight, and the table holds one row of the key. Without the
// scope's lock (the planted bug) the same race leaves several rows.
func TestPartitionedInsertsKeepOneRow(t *testing.T) {
	db := newTestDB(t)
	po := PartitionOptions{Span: time.Hour}
	s := db.newPartitionedStore(t, Options{Table: "locked", PollInterval: -1, readFirst: readFirstRandom}, po)
	if dups := raceNewKeys(t, db, s, false); dups != 0 {
		t.Fatalf("%d keys have more than one row", dups)
	}
	planted := db.newPartitionedStore(t, Options{Table: "unlocked", PollInterval: -1, readFirst: readFirstRandom, partitionInsertUnlocked: true}, po)
	if dups := raceNewKeys(t, db, planted, true); dups == 0 {
		t.Fatal("inserts without the scope's lock left one row per key: the race did not happen, the test shows nothing")
	}
}

// raceNewKeys reserves 20 new keys, 8 at once each, and counts the keys
// with more than one row; unless planted, every answer is checked.
func raceNewKeys(t *testing.T, db *testDB, s *Store, planted bool) int {
	t.Helper()
	const keys, clients = 20, 8
	for k := range keys {
		count := reservesAtOnce(t, s, testScope("race-"+itoa(k)), clients, !planted)
		if !planted && (count[core.DecisionExecute] != 1 || count[core.DecisionInFlight] != clients-1) {
			t.Fatalf("key %d: %v, want 1 execute and %d in flight", k, count, clients-1)
		}
	}
	var dups int
	err := db.pool.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT FROM `+s.n.qualified+` GROUP BY tenant, principal, use_case, idem_key HAVING count(*) > 1) AS d`).Scan(&dups)
	if err != nil {
		t.Fatal(err)
	}
	return dups
}

// TestPartitionKeepsRecords: a table with records partitioned in place
// keeps every record as it was (they load the same through a new Store),
// its index definitions and its schema version; then it lays out as
// documented (the legacy partition up to the current span's end, a
// default, the spans ahead), and a second Partition changes nothing.
func TestPartitionKeepsRecords(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	o := Options{Table: "kept", PollInterval: -1, Schema: db.schema}
	plain := db.newStore(t, o)
	p := core.PolicyDefault()
	var before []store.Snapshot
	for i := range 6 {
		sc := testScope("kept-" + itoa(i))
		a, err := applyOver(ctx, plain, &p, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			resp := core.Response{StatusCode: 201, Body: []byte(`{"n":` + itoa(i) + `}`)}
			if _, err := applyOver(ctx, plain, &p, sc, core.Event{Kind: core.EventComplete, Token: a.Record.Token, Response: resp}); err != nil {
				t.Fatal(err)
			}
		}
		snap, err := plain.Load(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, snap)
	}
	po := PartitionOptions{Span: time.Hour, Ahead: 2}
	for range 2 {
		if err := Partition(ctx, db.pool, o, po); err != nil {
			t.Fatal(err)
		}
	}
	s, err := New(ctx, db.pool, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, b := range before {
		snap, err := s.Load(ctx, b.Record.Scope)
		if err != nil {
			t.Fatal(err)
		}
		if !sameRecord(&snap.Record, &b.Record) {
			t.Errorf("record %d: %s after partitioning, %s before", i, snap.Record.Describe(), b.Record.Describe())
		}
	}
	parts, now, err := s.partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, pt := range parts {
		names = append(names, pt.name)
	}
	cut := parts[0].to // the legacy partition's end: the current span's end when Partition ran
	if !cut.Equal(po.spanStart(cut)) || !cut.After(now.Add(-po.Span)) || cut.After(now.Add(po.Span)) {
		t.Errorf("the legacy partition ends at %v: not the end of the span of %v", cut, now)
	}
	want := []string{"kept_legacy", partitionName("kept", cut), partitionName("kept", cut.Add(po.Span)), partitionName("kept", cut.Add(2*po.Span)), "kept_default"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("partitions %v, want %v", names, want)
	}
	if !parts[0].to.Equal(cut) {
		t.Errorf("the legacy partition ends at %v, want the current span's end %v", parts[1].to, cut)
	}
	var indexes int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND tablename = 'kept' AND indexname LIKE 'kept\_%\_idx'`, db.schema).Scan(&indexes); err != nil || indexes != 4 {
		t.Errorf("the partitioned table has %d of the plain table's 4 partial indexes (%v)", indexes, err)
	}
	// The attach adopted the legacy key and the four partial indexes; it
	// built nothing under its lock (a sixth index would be one it built).
	var legacyIndexes []string
	rows, err := db.pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'kept_legacy' ORDER BY 1`, db.schema)
	if err == nil {
		legacyIndexes, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || len(legacyIndexes) != 5 || !slices.Contains(legacyIndexes, "kept_legacy_pkey") {
		t.Errorf("the legacy partition's indexes: %v (%v), want its primary key and 4 partial indexes", legacyIndexes, err)
	}
	if v, err := schemaVersion(ctx, db.pool, s.n); err != nil || v != SchemaVersion {
		t.Errorf("schema version %d after partitioning (%v), want %d", v, err, SchemaVersion)
	}
}

// TestKeepPartitions: with spans of a second, KeepPartitions drops each
// past partition in which the core prunes every record (waking the
// waiters of its rows, in the same transaction), holds one where a
// record is completed within its TTL and one where a tombstone is within
// its retention (and says which), keeps the default partition, and
// creates the spans ahead; on a plain table it refuses.
func TestKeepPartitions(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	po := PartitionOptions{Span: time.Second, Ahead: 3}
	s := db.newPartitionedStore(t, Options{Table: "kept", PollInterval: -1}, po)
	parts, _, err := s.partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := parts[0].to // the legacy partition's end: the first of the spans created ahead
	b, c := a.Add(po.Span), a.Add(2*po.Span)
	insertRaw(t, db, s, "tomb-a", "expired", a, "1 millisecond", 3, true)
	insertRaw(t, db, s, "tomb-b", "expired", b, "1 millisecond", 2, false)
	insertRaw(t, db, s, "live-b", "completed", b, "1 hour", 1, false)
	insertRaw(t, db, s, "tomb-c", "expired", c, "1 millisecond", 2, false)
	insertRaw(t, db, s, "kept-c", "expired", c, "1 hour", 1, false) // a tombstone within its retention: only the core's step tells
	listen, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listen.Release()
	if _, err := listen.Exec(ctx, "LISTEN "+pgx.Identifier{s.n.channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(c.Add(po.Span + 50*time.Millisecond)))
	p := core.PolicyDefault()
	rep, err := s.KeepPartitions(ctx, &p, po)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rep.Dropped, " "); got != "kept_legacy "+partitionName("kept", a) || rep.DroppedRecords != 3 {
		t.Errorf("dropped %q (%d records), want the legacy partition and %s (3 records)", got, rep.DroppedRecords, partitionName("kept", a))
	}
	if len(rep.Held) != 2 || rep.Held[0].Name != partitionName("kept", b) || !strings.Contains(rep.Held[0].Why, "live-b") || !strings.Contains(rep.Held[0].Why, "completed") ||
		rep.Held[1].Name != partitionName("kept", c) || !strings.Contains(rep.Held[1].Why, "kept-c") || !strings.Contains(rep.Held[1].Why, "not a prune") {
		t.Errorf("held %+v, want %s for live-b (completed) and %s for kept-c (not a prune)", rep.Held, partitionName("kept", b), partitionName("kept", c))
	}
	if len(rep.Created) == 0 {
		t.Error("no partition created ahead, a second and more after the last")
	}
	var rows int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM `+s.n.qualified).Scan(&rows); err != nil || rows != 6 {
		t.Errorf("%d rows left (%v), want the 3 of span b and the 3 of span c", rows, err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	marked := core.Scope{Tenant: "t", Principal: "p", UseCase: "u", Key: "partitioned-key-tomb-a-0"}
	if n, err := listen.Conn().WaitForNotification(waitCtx); err != nil || n.Payload != notifyPayload(&marked) {
		t.Errorf("no notification for the dropped row a Wait marked: %v, %v", n, err)
	}
	plain := db.newStore(t, Options{Table: "plain", PollInterval: -1})
	if _, err := plain.KeepPartitions(ctx, &p, po); err == nil {
		t.Error("KeepPartitions on a plain table: no error")
	}
	if err := Partition(ctx, db.pool, Options{Schema: db.schema, Table: "absent"}, po); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("Partition of a table that does not exist: %v", err)
	}
}

// insertRaw inserts n records of status (keys prefix-0..) created at
// created, expiring (or prunable) that much later; the first marked by a
// Wait when marked.
func insertRaw(t *testing.T, db *testDB, s *Store, prefix, status string, created time.Time, expires string, n int, marked bool) {
	t.Helper()
	_, err := db.pool.Exec(context.Background(), `INSERT INTO `+s.n.qualified+` (tenant, principal, use_case, idem_key, status, fingerprint, token, version,
		response_status, created_at, updated_at, completed_at, expires_at, waiters)
		SELECT 't', 'p', 'u', 'partitioned-key-' || $1 || '-' || g, $2, decode(repeat('ab', 32), 'hex'), nextval(`+quoteLiteral(s.n.sequence)+`::regclass), 2,
			CASE WHEN $2 = 'completed' THEN 201 ELSE 0 END, $3::timestamptz, now(), $3::timestamptz, $3::timestamptz + $4::interval, $5 AND g = 0
		FROM generate_series(0, $6 - 1) AS g`, prefix, status, created, expires, marked, n)
	if err != nil {
		t.Fatal(err)
	}
}

// TestPartitionedInsertNeedsReadCommitted: in a caller's REPEATABLE READ
// transaction the snapshot is the transaction's, taken before the scope's
// lock, and could miss a row another transaction inserted: an insert into
// a partitioned table is refused (store.ErrRejected), and writes nothing.
// In READ COMMITTED it goes through.
func TestPartitionedInsertNeedsReadCommitted(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	s := db.newPartitionedStore(t, Options{Table: "iso", PollInterval: -1}, PartitionOptions{Span: time.Hour})
	p := core.PolicyDefault()
	for _, c := range []struct {
		level  pgx.TxIsoLevel
		refuse bool
	}{{pgx.RepeatableRead, true}, {pgx.Serializable, true}, {pgx.ReadCommitted, false}} {
		sc := testScope("isolation-" + string(c.level))
		tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: c.level})
		if err != nil {
			t.Fatal(err)
		}
		// Both inserts: the load, step and insert (Store.Insert) first,
		// then the one-statement reserve (Applier).
		_, err = applyOver(ctx, plain{ops{s: s, q: tx, tx: true}}, &p, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
		if c.refuse != errors.Is(err, store.ErrRejected) || (!c.refuse && err != nil) {
			t.Errorf("%s: a reserve of a new key by load, step and insert: %v", c.level, err)
		}
		if c.refuse {
			_ = tx.Rollback(ctx)
			if tx, err = db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: c.level}); err != nil {
				t.Fatal(err)
			}
			_, err = applyOver(ctx, s.WithTx(tx), &p, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
			if !errors.Is(err, store.ErrRejected) {
				t.Errorf("%s: a reserve of a new key in one statement: %v", c.level, err)
			}
		}
		if err == nil {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		var rows int
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM `+s.n.qualified+` WHERE `+scopeMatch, scopeNamed(sc)).Scan(&rows); err != nil || rows != map[bool]int{true: 0, false: 1}[c.refuse] {
			t.Errorf("%s: %d rows of the key (%v)", c.level, rows, err)
		}
	}
}

// TestPartitionedNewIncarnationMoves: a key whose record expired, reserved
// again in a later span, starts a new incarnation (created_at now), and its
// row moves to that span's partition: still one row of the key, in the
// partition of its new created_at, and the old partition holds none.
func TestPartitionedNewIncarnationMoves(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	po := PartitionOptions{Span: time.Second, Ahead: 5}
	s := db.newPartitionedStore(t, Options{Table: "moves", PollInterval: -1}, po)
	p := core.PolicyDefault()
	p.TTL, p.TombstoneRetention = 50*time.Millisecond, time.Hour
	sc := testScope("moves-0123456789")
	first, err := applyOver(ctx, s, &p, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
	if err != nil {
		t.Fatal(err)
	}
	var done store.Applied // the held path: the update that names the record's partition
	if err := s.ApplyHeld(ctx, &first.Record, core.Event{Kind: core.EventComplete, Token: first.Record.Token, Response: core.Response{StatusCode: 201}}, &p, &done); err != nil || done.Record.Status != core.StatusCompleted {
		t.Fatalf("complete: %v, %v", done.Record.Status, err)
	}
	time.Sleep(time.Until(po.spanStart(first.Record.CreatedAt).Add(po.Span + 20*time.Millisecond)))
	if a, err := applyOver(ctx, s, &p, sc, core.Event{Kind: core.EventSweep}); err != nil || a.Record.Status != core.StatusExpired {
		t.Fatalf("sweep after the TTL: %v, %v", a.Record.Status, err)
	}
	again, err := applyOver(ctx, s, &p, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
	if err != nil || again.Transition.Decision.Kind != core.DecisionExecute || !again.Record.CreatedAt.After(first.Record.CreatedAt) {
		t.Fatalf("reserve of the expired key: %v, created %v (first %v), %v", again.Transition.Decision.Kind, again.Record.CreatedAt, first.Record.CreatedAt, err)
	}
	rows, err := db.pool.Query(ctx, `SELECT tableoid::regclass::text FROM `+s.n.qualified+` WHERE `+scopeMatch, scopeNamed(sc))
	if err != nil {
		t.Fatal(err)
	}
	parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := partitionName("moves", po.spanStart(again.Record.CreatedAt))
	if len(parts) != 1 || !strings.HasSuffix(parts[0], want) {
		t.Errorf("the key's rows are in %v, want one, in %s", parts, want)
	}
}

// TestStoreOpenedBeforePartitionFailsClosed: a Store opened on the plain
// table keeps a plain table's statements after Partition ran (New reads
// the layout once). Its inserts name the scope's unique key, which the
// partitioned table no longer has: each is refused (store.ErrRejected),
// never a second row of a key, by every way a reserve inserts.
func TestStoreOpenedBeforePartitionFailsClosed(t *testing.T) {
	db := newTestDB(t)
	ctx := context.Background()
	o := Options{Table: "before", PollInterval: -1, Schema: db.schema}
	var olds []*Store
	for _, mode := range []readFirstMode{insertFirstAlways, readFirstNever, readFirstAlways} {
		o.readFirst = mode
		olds = append(olds, db.newStore(t, o))
	}
	p := core.PolicyDefault()
	sc := testScope("before-partition-0")
	if _, err := applyOver(ctx, olds[0], &p, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP}); err != nil {
		t.Fatal(err)
	}
	if err := Partition(ctx, db.pool, o, PartitionOptions{Span: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for i, s := range olds {
		_, err := applyOver(ctx, s, &p, testScope("before-partition-new-"+itoa(i)), core.Event{Kind: core.EventReserve, Fingerprint: testFP})
		if !errors.Is(err, store.ErrRejected) {
			t.Errorf("way %d: a new key through a Store opened before Partition: %v, want ErrRejected", i, err)
		}
		if err == nil || !strings.Contains(err.Error(), "partitioned after this Store was opened") {
			t.Errorf("way %d: the error does not say why: %v", i, err)
		}
		// The key reserved before: the read-first way reads it (in
		// flight); the others insert first, and are refused the same way.
		a, err := applyOver(ctx, s, &p, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
		if err == nil && a.Transition.Decision.Kind != core.DecisionInFlight || err != nil && !errors.Is(err, store.ErrRejected) {
			t.Errorf("way %d: the key in flight: %v, %v", i, a.Transition.Decision.Kind, err)
		}
	}
	var rows int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM `+olds[0].n.qualified).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("%d rows (%v), want the one reserved before", rows, err)
	}
}
