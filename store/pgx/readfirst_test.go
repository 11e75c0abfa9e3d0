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

// TestReadFirstAdapts: by default a reserve sends the insert-or-read while
// its traffic is new keys (two round trips a new key, none of them a
// read), switches to the plain read once replays dominate (a replay is that
// read alone), and switches back when new keys return.
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
		if len(sent) != 2 || sent[0] != s.sql.reserve.sql {
			t.Fatalf("new key %d of a run of new keys sent %d statements, the first %q: want the insert-or-read and the completion", i, len(sent), sent[0])
		}
	}
	var first int // the first replay that was a plain read
	for i := range keys {
		sent := do("adapt-"+itoa(i), idem.ResultReplayed)
		if len(sent) != 1 {
			t.Fatalf("replay %d sent %d statements, want 1", i, len(sent))
		}
		if sent[0] == s.sql.read.sql && first == 0 {
			first = i + 1
		}
		if first != 0 && sent[0] != s.sql.read.sql {
			t.Fatalf("replay %d went back to the insert-or-read in a run of replays", i)
		}
	}
	if first == 0 || first > 2*foundWindow {
		t.Fatalf("replays switched to the plain read after %d of %d, want within %d", first, keys, 2*foundWindow)
	}
	last := 0 // the last new key that read first
	for i := range keys {
		sent := do("adapt-again-"+itoa(i), idem.ResultExecuted)
		switch {
		case len(sent) == 3 && sent[0] == s.sql.read.sql && sent[1] == s.sql.reserve.sql:
			last = i + 1
		case len(sent) != 2 || sent[0] != s.sql.reserve.sql:
			t.Fatalf("new key %d after replays sent %q", i, sent)
		}
	}
	if last == 0 || last > foundWindow {
		t.Fatalf("new keys after replays read first %d times, want some and at most %d", last, foundWindow)
	}
}

// TestReadFirstModes: ReadFirst reads first from the start, the
// benchmarks' readFirstNever never does, whatever the traffic.
func TestReadFirstModes(t *testing.T) {
	var s Store
	for i := 0; i < 4*foundWindow; i++ {
		s.observeReserve(true)
	}
	if !s.readsFirst() {
		t.Fatal("a run of found records left the adaptive choice on the insert-or-read")
	}
	s.readFirst = readFirstNever
	if s.readsFirst() {
		t.Fatal("readFirstNever read first")
	}
	s = Store{readFirst: readFirstAlways}
	if !s.readsFirst() {
		t.Fatal("ReadFirst did not read first")
	}
	var f foundShare
	for range 4 * foundWindow {
		f.observe(true)
		f.observe(true)
		f.observe(false)
	}
	if f.high() {
		t.Fatal("two reserves in three finding their record made reading first the choice, want three in four")
	}
}

// TestConformanceBothWays runs the suite over Stores that pick the read or
// the insert-or-read at random on each reserve, so that one history mixes
// them, as the adaptive choice does when it switches under load.
func TestConformanceBothWays(t *testing.T) {
	conformance(t, Options{readFirst: readFirstRandom}, 1)
}
