package pgxstore

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem"
)

// statementLog records the SQL of each statement a pool sends.
type statementLog struct {
	mu  sync.Mutex
	sql []string
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	l.sql = append(l.sql, d.SQL)
	l.mu.Unlock()
	return ctx
}
func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// during returns the statements f sent.
func (l *statementLog) during(f func()) []string {
	l.mu.Lock()
	l.sql = nil
	l.mu.Unlock()
	f()
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sql...)
}

// loggedStore is a Store of options o in db's schema over a pool of its
// own whose statements log records.
func loggedStore(t *testing.T, db *testDB, o Options) (*Store, *statementLog) {
	t.Helper()
	ctx := context.Background()
	o.Schema = db.schema
	if err := Migrate(ctx, db.pool, o); err != nil {
		t.Fatal(err)
	}
	log := new(statementLog)
	cfg := db.pool.Config().Copy()
	cfg.ConnConfig.Tracer = log
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := New(ctx, pool, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, log
}

// TestReadFirstAdapts: by default a reserve sends the plain insert while
// its traffic is new keys (two round trips a new key: the insert and the
// completion), switches to the plain read once replays dominate (a replay
// is that read alone), passing through the insert-or-read, and switches
// back when new keys return.
func TestReadFirstAdapts(t *testing.T) {
	db := newTestDB(t)
	s, log := loggedStore(t, db, Options{PollInterval: -1})
	ex, err := idem.New(s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	resp := idem.Response{StatusCode: 201, Body: []byte(`{"id":1}`)}
	action := func(context.Context, idem.Attempt) (idem.Response, error) { return resp, nil }
	do := func(key string, want idem.ResultKind) []string {
		t.Helper()
		return log.during(func() {
			r, err := ex.Do(ctx, idem.Request{Scope: testScope(key), Fingerprint: testFP}, action)
			if err != nil || r.Kind != want {
				t.Fatalf("Do %s: %+v, %v; want %v", key, r, err, want)
			}
		})
	}
	const keys = 3 * foundWindow
	for i := range keys {
		sent := do("adapt-"+itoa(i), idem.ResultExecuted)
		if len(sent) != 2 || sent[0] != s.sql.insertNew.sql || sent[1] != s.sql.update.sql {
			t.Fatalf("new key %d of a run of new keys sent %q: want the plain insert and the completion", i, sent)
		}
	}
	ways := replayWays(t, s, keys, func(i int) []string { return do("adapt-"+itoa(i), idem.ResultReplayed) })
	if ways[wayInsert] == 0 || ways[wayInsertOrRead] == 0 || ways[wayRead] < keys-2*foundWindow {
		t.Fatalf("replays after new keys went insert first %d times, insert-or-read %d, read first %d: want each, and read first from %d on",
			ways[wayInsert], ways[wayInsertOrRead], ways[wayRead], 2*foundWindow)
	}
	last := 0 // the last new key that read first
	for i := range keys {
		sent := do("adapt-again-"+itoa(i), idem.ResultExecuted)
		switch {
		case len(sent) == 3 && sent[0] == s.sql.read.sql && sent[1] == s.sql.reserve.sql:
			last = i + 1
		case len(sent) == 2 && (sent[0] == s.sql.reserve.sql || sent[0] == s.sql.insertNew.sql):
		default:
			t.Fatalf("new key %d after replays sent %q", i, sent)
		}
		if i == keys-1 && sent[0] != s.sql.insertNew.sql {
			t.Fatalf("a run of %d new keys ended on %q, want the plain insert", keys, sent[0])
		}
	}
	if last == 0 || last > foundWindow {
		t.Fatalf("new keys after replays read first %d times, want some and at most %d", last, foundWindow)
	}
}

// replayWays runs keys replays by do and counts the ways they took, which
// must move only from inserting first to reading first (a replay inserting
// first sends the insert and the read; any other, one statement).
func replayWays(t *testing.T, s *Store, keys int, do func(i int) []string) (ways [wayCount]int) {
	t.Helper()
	prev := wayInsert
	for i := range keys {
		sent := do(i)
		var w reserveWay
		switch {
		case len(sent) == 2 && sent[0] == s.sql.insertNew.sql && sent[1] == s.sql.read.sql:
			w = wayInsert
		case len(sent) == 1 && sent[0] == s.sql.reserve.sql:
			w = wayInsertOrRead
		case len(sent) == 1 && sent[0] == s.sql.read.sql:
			w = wayRead
		default:
			t.Fatalf("replay %d sent %q", i, sent)
		}
		if w != prev && !(prev == wayInsert && w == wayInsertOrRead) && !(prev == wayInsertOrRead && w == wayRead) {
			t.Fatalf("replay %d went from way %d back to way %d in a run of replays", i, prev, w)
		}
		prev = w
		ways[w]++
	}
	return ways
}

// TestReadFirstModes: ReadFirst reads first from the start, the
// benchmarks' readFirstNever always sends the insert-or-read and
// insertFirstAlways the plain insert, whatever the traffic; the adaptive
// choice moves between the three at its thresholds.
func TestReadFirstModes(t *testing.T) {
	var s Store
	if w := s.reserveWay(); w != wayInsert {
		t.Fatalf("a new Store's first reserve took way %d, want the plain insert", w)
	}
	for i := 0; i < 4*foundWindow; i++ {
		s.observeReserve(true)
	}
	if w := s.reserveWay(); w != wayRead {
		t.Fatalf("a run of found records left the adaptive choice on way %d", w)
	}
	for mode, want := range map[readFirstMode]reserveWay{readFirstNever: wayInsertOrRead, readFirstAlways: wayRead, insertFirstAlways: wayInsert} {
		for _, found := range []bool{false, true} {
			s := Store{readFirst: mode}
			for range 4 * foundWindow {
				s.observeReserve(found)
			}
			if w := s.reserveWay(); w != want {
				t.Fatalf("mode %d after found=%v took way %d, want %d", mode, found, w, want)
			}
		}
	}
	share := func(found, of int) reserveWay {
		var f foundShare
		for range 8 * foundWindow {
			for i := range of {
				f.observe(i < found)
			}
		}
		return f.way()
	}
	if w := share(2, 3); w != wayInsertOrRead {
		t.Fatalf("two reserves in three finding their record took way %d, want the insert-or-read (read first from three in four)", w)
	}
	if w := share(1, 6); w != wayInsertOrRead {
		t.Fatalf("one reserve in six finding its record took way %d, want the insert-or-read (insert first below one in eight)", w)
	}
	if w := share(1, 10); w != wayInsert {
		t.Fatalf("one reserve in ten finding its record took way %d, want the plain insert", w)
	}
}

// TestConformanceBothWays runs the suite over Stores that pick the read,
// the insert-or-read or the plain insert at random on each reserve, so
// that one history mixes them, as the adaptive choice does when it
// switches under load.
func TestConformanceBothWays(t *testing.T) {
	conformance(t, Options{readFirst: readFirstRandom}, 1)
}
