package pgxstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// seed inserts a record per scope made by mk from the database's clock and
// a fresh token (Load), through the plain Insert.
func seed(t testing.TB, s *Store, scopes []core.Scope, mk func(sc core.Scope, now time.Time, tok core.Token) core.Record) {
	t.Helper()
	ctx := context.Background()
	for _, sc := range scopes {
		snap, err := s.Load(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		rec := mk(sc, snap.Now, snap.FreshToken)
		if err := s.Insert(ctx, &rec); err != nil {
			t.Fatal(err)
		}
	}
}

func scopes(prefix string, n int) []core.Scope {
	out := make([]core.Scope, n)
	for i := range out {
		out[i] = testScope(prefix + "-" + itoa(i))
	}
	return out
}

// leaseRanOut is an in_progress record whose lease ended d before now.
func leaseRanOut(d time.Duration) func(core.Scope, time.Time, core.Token) core.Record {
	return func(sc core.Scope, now time.Time, tok core.Token) core.Record {
		return core.Record{Scope: sc, Status: core.StatusInProgress, Fingerprint: testFP, Token: tok, Version: 1,
			LockedUntil: now.Add(-d), CreatedAt: now.Add(-d - time.Minute), ExpiresAt: now.Add(time.Hour)}
	}
}

// TestDueClaimInstances: with DueClaim, one Store's Due hides what it
// claimed from another Store (another instance), but lists it again to
// itself; a claim that ran out hides nothing.
func TestDueClaimInstances(t *testing.T) {
	db := newTestDB(t)
	a := db.newStore(t, Options{DueClaim: time.Hour})
	b := db.newStore(t, Options{DueClaim: time.Hour})
	ctx := context.Background()
	seed(t, a, scopes("claim", 5), leaseRanOut(time.Second))
	list := func(s *Store, limit int) int {
		t.Helper()
		recs, err := s.Due(ctx, store.DueSweep, limit)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	if n := list(a, 3); n != 3 {
		t.Fatalf("instance A: %d of 3", n)
	}
	if n := list(b, 10); n != 2 {
		t.Fatalf("instance B lists %d records, want the 2 A did not claim", n)
	}
	if n := list(a, 10); n != 3 {
		t.Fatalf("instance A lists %d records again, want its own 3 (B holds 2)", n)
	}
	// A claim that ran out: a Store with a one-microsecond claim.
	c := db.newStore(t, Options{DueClaim: time.Microsecond})
	d := db.newStore(t, Options{DueClaim: time.Microsecond})
	if _, err := db.pool.Exec(ctx, `UPDATE `+c.n.qualified+` SET claimed_until = NULL`); err != nil {
		t.Fatal(err)
	}
	if n := list(c, 10); n != 5 {
		t.Fatalf("C lists %d, want 5", n)
	}
	if n := list(d, 10); n != 5 {
		t.Fatalf("D lists %d after C's claims ran out, want 5", n)
	}
}

// TestDueClaimDisjoint: two instances' sweepers, running at once over the
// same table, each list and sweep batches until nothing is due; with
// DueClaim every record is listed (and so handled) by exactly one of them.
// Without claims both list the same records (the sweep itself stays
// correct: the second write is refused by its precondition).
func TestDueClaimDisjoint(t *testing.T) {
	db := newTestDB(t)
	const n = 120
	stores := []*Store{db.newStore(t, Options{DueClaim: time.Minute}), db.newStore(t, Options{DueClaim: time.Minute})}
	seed(t, stores[0], scopes("disjoint", n), leaseRanOut(time.Second))
	handled := make([][]core.Scope, len(stores))
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, len(stores))
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			swept, err := sweepAll(context.Background(), s, 7)
			handled[i] = swept
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[core.Scope]int{}
	for i := range handled {
		for _, sc := range handled[i] {
			seen[sc]++
		}
	}
	if len(seen) != n {
		t.Fatalf("%d records listed, want %d", len(seen), n)
	}
	for sc, c := range seen {
		if c != 1 {
			t.Fatalf("%s listed %d times (by both instances, or twice by one)", sc, c)
		}
	}
	t.Logf("instance A listed and swept %d, B %d", len(handled[0]), len(handled[1]))
}

// sweepAll lists batches of due sweeps and sweeps each record (load, step,
// fenced write: what the executor's sweeper does), until nothing is due. It
// returns the scopes its Due listed.
func sweepAll(ctx context.Context, s *Store, batch int) ([]core.Scope, error) {
	p := core.PolicyDefault()
	var swept []core.Scope
	for {
		recs, err := s.Due(ctx, store.DueSweep, batch)
		if err != nil {
			return swept, err
		}
		if len(recs) == 0 {
			return swept, nil
		}
		for _, r := range recs {
			var a store.Applied
			if err := store.Apply(ctx, s, r.Scope, core.Event{Kind: core.EventSweep}, &p, &a); err != nil {
				return swept, err
			}
			swept = append(swept, r.Scope)
		}
	}
}

// tombstone is an expired record whose retention ends d after now
// (negative: it ended).
func tombstone(d time.Duration) func(core.Scope, time.Time, core.Token) core.Record {
	return func(sc core.Scope, now time.Time, tok core.Token) core.Record {
		return core.Record{Scope: sc, Status: core.StatusExpired, Fingerprint: testFP, Token: tok, Version: 2,
			CreatedAt: now.Add(-time.Hour), CompletedAt: now.Add(-time.Hour), ExpiresAt: now.Add(d)}
	}
}

// TestPrune: Prune deletes only tombstones past their retention, oldest
// first, at most a batch at a time, and leaves every other record.
func TestPrune(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{})
	ctx := context.Background()
	old := scopes("prune-due", 5)
	for i := len(old) - 1; i >= 0; i-- { // newest first: the table's order is not the retention's
		seed(t, s, []core.Scope{old[i]}, tombstone(-time.Duration(10-i)*time.Minute)) // old[0] oldest
	}
	seed(t, s, scopes("prune-kept", 2), tombstone(time.Hour))
	seed(t, s, scopes("prune-completed", 2), func(sc core.Scope, now time.Time, tok core.Token) core.Record {
		return core.Record{Scope: sc, Status: core.StatusCompleted, Fingerprint: testFP, Token: tok, Version: 2,
			Response: core.Response{StatusCode: 201}, CreatedAt: now.Add(-time.Hour), CompletedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)}
	})
	seed(t, s, scopes("prune-lease", 1), leaseRanOut(time.Minute))
	// The batches are taken by a Store whose sessions scan no index, as a
	// server may plan for a large table: the order must be the statement's,
	// not that of an index it happens to read.
	pruner := db.seqScanStore(t)
	p := core.PolicyDefault()
	n, err := pruner.Prune(ctx, &p, 3)
	if err != nil || n != 3 {
		t.Fatalf("first batch: %d, %v; want 3", n, err)
	}
	for i, sc := range old {
		snap, err := s.Load(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		if gone := !snap.Record.Exists(); gone != (i < 3) {
			t.Fatalf("tombstone %d (of 5, oldest first): pruned %v after a batch of 3", i, gone)
		}
	}
	if n, err := pruner.Prune(ctx, &p, 10); err != nil || n != 2 {
		t.Fatalf("second batch: %d, %v; want 2", n, err)
	}
	if n, err := pruner.Prune(ctx, &p, 10); err != nil || n != 0 {
		t.Fatalf("third batch: %d, %v; want 0", n, err)
	}
	var left int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM `+s.n.qualified).Scan(&left); err != nil || left != 5 {
		t.Fatalf("%d records left (%v), want the 2 kept tombstones, 2 completed and 1 in progress", left, err)
	}
}

// seqScanStore is a Store over a pool of its own whose sessions scan no
// index (enable_indexscan and the like off), in the test's schema.
func (db *testDB) seqScanStore(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	cfg := db.pool.Config().Copy()
	for _, param := range []string{"enable_indexscan", "enable_indexonlyscan", "enable_bitmapscan"} {
		cfg.ConnConfig.RuntimeParams[param] = "off"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := New(ctx, pool, Options{Schema: db.schema, PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPruneCheckedByCore: a row the core would not prune is a driver bug,
// whatever the statement picked.
func TestPruneCheckedByCore(t *testing.T) {
	p := core.PolicyDefault()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	sc := testScope("prune-check")
	rec := tombstone(-time.Second)(sc, now, 9)
	if err := checkPruned(&rec, &p, now); err != nil {
		t.Fatalf("a due tombstone: %v", err)
	}
	for name, bad := range map[string]core.Record{
		"not yet due": tombstone(time.Second)(sc, now, 9),
		"completed":   {Scope: sc, Status: core.StatusCompleted, Fingerprint: testFP, Token: 9, Version: 2, CreatedAt: now, CompletedAt: now, ExpiresAt: now.Add(-time.Second)},
		"in progress": leaseRanOut(time.Second)(sc, now, 9),
	} {
		if err := checkPruned(&bad, &p, now); !store.DriverBug(err) {
			t.Errorf("%s: %v, want a driver bug", name, err)
		}
	}
}

// TestNotifyOnlyWhenWaited: a write to a row no Wait marked sends no
// NOTIFY; a Wait marks the row, and the next write wakes it by NOTIFY (the
// poll is an hour) and clears the mark.
func TestNotifyOnlyWhenWaited(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{PollInterval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := core.PolicyDefault()
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `LISTEN "`+s.n.channel+`"`); err != nil {
		t.Fatal(err)
	}
	reserve := func(sc core.Scope) store.Applied {
		var a store.Applied
		if err := store.Apply(ctx, s, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP}, &p, &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	complete := func(a *store.Applied) {
		var done store.Applied
		if err := store.ApplyHeld(ctx, s, &a.Record, core.Event{Kind: core.EventComplete, Token: a.Record.Token, Response: core.Response{StatusCode: 200}}, &p, &done); err != nil {
			t.Fatal(err)
		}
	}
	quiet, waited := testScope("notify-quiet"), testScope("notify-waited")
	qa, wa := reserve(quiet), reserve(waited)
	complete(&qa) // nobody waits: no NOTIFY
	woke := make(chan error, 1)
	go func() { woke <- s.Wait(ctx, waited, wa.Record.Version, wa.Record.Token) }()
	marked := false
	for !marked { // until the waiter's read marked the row
		if err := db.pool.QueryRow(ctx, `SELECT waiters FROM `+s.n.qualified+` WHERE idem_key = $1`, waited.Key).Scan(&marked); err != nil {
			t.Fatal(err)
		}
	}
	complete(&wa)
	if err := <-woke; err != nil {
		t.Fatalf("Wait: %v (not woken by NOTIFY: the poll is an hour)", err)
	}
	n, err := conn.Conn().WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Payload != notifyPayload(&waited) {
		t.Fatalf("first notification is for %s, want the waited scope's %s (the unwatched completion notified)", n.Payload, notifyPayload(&waited))
	}
	if err := db.pool.QueryRow(ctx, `SELECT waiters FROM `+s.n.qualified+` WHERE idem_key = $1`, waited.Key).Scan(&marked); err != nil || marked {
		t.Fatalf("mark after the write: %v, %v; want cleared", marked, err)
	}
}

// BenchmarkSweepInstances: 2,000 records whose lease ran out, swept to the
// end by 1 or 2 instances at once (each a Store with DueClaim, listing
// batches of 100 and sweeping each record: load, step, fenced write).
// records/s compares the two; on a 2-core machine that also runs the
// server, the second instance competes with PostgreSQL for the same cores.
func BenchmarkSweepInstances(b *testing.B) {
	for _, n := range []int{1, 2} {
		b.Run("instances="+itoa(n), func(b *testing.B) {
			db := newTestDB(b)
			var stores []*Store
			for range n {
				stores = append(stores, db.newStore(b, Options{DueClaim: time.Minute}))
			}
			ctx := context.Background()
			const records = 2000
			round := 0
			for b.Loop() {
				b.StopTimer()
				round++
				if _, err := db.pool.Exec(ctx, `INSERT INTO `+stores[0].n.qualified+` (tenant, principal, use_case, idem_key, status,
					fingerprint, token, version, locked_until, created_at, updated_at, expires_at)
					SELECT '', 'p', 'u', $1 || '-' || n, 'in_progress', decode(repeat('ab', 32), 'hex'),
						nextval(`+quoteLiteral(stores[0].n.sequence)+`::regclass), 1, now() - interval '1 second', now() - interval '1 minute', now(), now() + interval '1 hour'
					FROM generate_series(1, $2::int) AS n`, "r"+itoa(round), records); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				var wg sync.WaitGroup
				for _, s := range stores {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if _, err := sweepAll(ctx, s, 100); err != nil {
							b.Error(err)
						}
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.N*records)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
