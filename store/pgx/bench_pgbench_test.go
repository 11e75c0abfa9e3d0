package pgxstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// pgbenchTurn is how long each load of BenchmarkAgainstPgbench runs in a
// round (pgbench's -T: whole seconds).
const pgbenchTurn = 3 * time.Second

// pgbenchLoad is one load of BenchmarkAgainstPgbench: run sends it from
// clients clients for pgbenchTurn and returns requests (or pgbench's
// transactions) a second.
type pgbenchLoad struct {
	name   string
	run    func(b *testing.B, clients int) float64
	rounds []float64
}

// BenchmarkAgainstPgbench measures the driver's new key and replay beside
// pgbench's raw-SQL baselines (../shared/bench/pg: b_lifecycle_autocommit
// and d_replay on schema.sql, loaded as run.sh loads it, in the
// benchmark's own schema) in one run: each round (one iteration; run it
// with -benchtime 5x or more) runs every load in turn for pgbenchTurn,
// in an order of its own (a random one), so that a shared machine's load
// falls on all alike and none always follows the same other.
// Through Do: the default (the adaptive choice of readfirst.go), the
// insert-or-read alone (the default reserve before issue 25; its
// completion is the default's plain UPDATE since issue 25 §2) and
// ReadFirst; and straight through pgx, Go's floors: a plain SELECT of the
// record for a replay, the driver's two statements for a new key. It
// reports each load's median req/s and the ratios of medians the targets
// are about (and the median of each round's ratio).
func BenchmarkAgainstPgbench(b *testing.B) {
	dir := pgbenchScripts(b)
	db := newTestDBConns(b, 16)
	pgbenchSchema(b, db, dir)
	for _, clients := range []int{1, 16} {
		b.Run("clients="+itoa(clients), func(b *testing.B) { benchAgainstPgbench(b, db, dir, clients) })
	}
}

func benchAgainstPgbench(b *testing.B, db *testDB, dir string, clients int) {
	// One default Store takes both kinds of traffic, turn after turn, as a
	// service's does: its choice adapts at each change of turn.
	stores := pgbenchStores(b, db)
	loads := append(pgbenchReplayLoads(b, db, dir, stores), pgbenchNewKeyLoads(b, dir, db, stores)...)
	for b.Loop() {
		for _, j := range rand.Perm(len(loads)) {
			runtime.GC()
			l := loads[j]
			l.rounds = append(l.rounds, l.run(b, clients))
		}
	}
	medians := map[string]float64{}
	for _, l := range loads {
		medians[l.name] = median(l.rounds)
		b.ReportMetric(medians[l.name], l.name+"-req/s")
		b.Logf("%s: %.0f req/s, rounds %.0f", l.name, medians[l.name], l.rounds)
	}
	byName := func(name string) *pgbenchLoad {
		i := slices.IndexFunc(loads, func(l *pgbenchLoad) bool { return l.name == name })
		return loads[i]
	}
	for _, r := range [][2]string{
		{"replay", "pgbench-d_replay"}, {"replay-insert-or-read", "pgbench-d_replay"}, {"replay-readfirst", "pgbench-d_replay"},
		{"select", "pgbench-d_replay"}, {"newkey", "pgbench-b_lifecycle"}, {"newkey-insert-or-read", "pgbench-b_lifecycle"},
		{"newkey-readfirst", "pgbench-b_lifecycle"}, {"newkey", "newkey-insert-or-read"}, {"replay", "replay-insert-or-read"},
		{"newkey-floor", "pgbench-b_lifecycle"}, {"newkey", "newkey-floor"},
	} {
		b.ReportMetric(medians[r[0]]/medians[r[1]], r[0]+"/"+r[1])
		num, den := byName(r[0]).rounds, byName(r[1]).rounds
		ratios := make([]float64, len(num))
		for i := range num {
			ratios[i] = num[i] / den[i]
		}
		b.ReportMetric(median(ratios), r[0]+"/"+r[1]+"-median-of-rounds")
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// pgbenchReplayLoads are the replay's: pgbench's d_replay; a replay of one
// of 1000 completed keys through Do by default, by the insert-or-read
// alone, and reading first; a plain SELECT of one through pgx.
func pgbenchReplayLoads(b *testing.B, db *testDB, dir string, stores [3]*idemStore) []*pgbenchLoad {
	def, before, rf := stores[0], stores[1], stores[2]
	prefix := benchKeyPrefix()
	const preloaded = 1000
	key := func(i int64) string { return prefix + "-" + itoa(int(i%preloaded)) + "-replay-key" }
	for i := range int64(preloaded) {
		if err := doOnce(def, key(i), idem.ResultExecuted); err != nil {
			b.Fatal(err)
		}
	}
	sel := bind(readSQL(def.n))
	return []*pgbenchLoad{
		{name: "pgbench-d_replay", run: pgbenchRun(db, dir, "d_replay")},
		{name: "replay", run: goLoad(func(i int64) error { return doOnce(def, key(i), idem.ResultReplayed) })},
		{name: "replay-insert-or-read", run: goLoad(func(i int64) error { return doOnce(before, key(i), idem.ResultReplayed) })},
		{name: "replay-readfirst", run: goLoad(func(i int64) error { return doOnce(rf, key(i), idem.ResultReplayed) })},
		{name: "select", run: goLoad(func(i int64) error {
			var v argv
			var now time.Time
			var r row
			sc := benchScope(key(i))
			return db.pool.QueryRow(context.Background(), sel.sql, sel.args(v.scope(sc.Tenant, sc.Principal, sc.UseCase, sc.Key))...).Scan(r.dest([]any{&now})...)
		})},
	}
}

// pgbenchNewKeyLoads are the new key's: pgbench's b_lifecycle_autocommit;
// a new key through Do by default, by the insert-or-read alone, and
// reading first; and the driver's two statements of a new key straight
// through pgx (floorStatements), the floor of Do.
func pgbenchNewKeyLoads(b *testing.B, dir string, db *testDB, stores [3]*idemStore) []*pgbenchLoad {
	def, before, rf := stores[0], stores[1], stores[2]
	numbered := func(do func(key string) error) func(int64) error {
		prefix := benchKeyPrefix() // each load numbers its calls from 1
		return func(i int64) error { return do(prefix + "-" + itoa(int(i)) + "-new-key-0000") }
	}
	newKey := func(s *idemStore) func(int64) error {
		return numbered(func(key string) error { return doOnce(s, key, idem.ResultExecuted) })
	}
	return []*pgbenchLoad{
		{name: "pgbench-b_lifecycle", run: pgbenchRun(db, dir, "b_lifecycle_autocommit")},
		{name: "newkey", run: goLoad(newKey(def))},
		{name: "newkey-insert-or-read", run: goLoad(newKey(before))},
		{name: "newkey-readfirst", run: goLoad(newKey(rf))},
		{name: "newkey-floor", run: goLoad(numbered(floorStatements(b, def.Store, false, false)))},
	}
}

// pgbenchStores are three Stores of one table, each with an Executor:
// the default, the insert-or-read alone, and ReadFirst.
func pgbenchStores(b *testing.B, db *testDB) [3]*idemStore {
	mk := func(o Options) *idemStore {
		o.Table = "records"
		s := db.newStore(b, o)
		ex, err := idem.New(s)
		if err != nil {
			b.Fatal(err)
		}
		return &idemStore{Store: s, ex: ex}
	}
	return [3]*idemStore{mk(Options{}), mk(Options{readFirst: readFirstNever}), mk(Options{ReadFirst: true})}
}

type idemStore struct {
	*Store
	ex *idem.Executor
}

func benchScope(key string) core.Scope {
	return core.Scope{Principal: "merchant", UseCase: "payments.create", Key: key}
}

var benchResponse = idem.Response{StatusCode: 201, Body: []byte(`{"paymentId":"p_1","status":"created"}`)}

// doOnce sends one request for key through s's Executor, and wants kind.
func doOnce(s *idemStore, key string, kind idem.ResultKind) error {
	action := func(context.Context, idem.Attempt) (idem.Response, error) { return benchResponse, nil }
	r, err := s.ex.Do(context.Background(), idem.Request{Scope: benchScope(key), Fingerprint: testFP}, action)
	if err != nil || r.Kind != kind {
		return fmt.Errorf("Do %s: %+v, %v; want %v", key, r, err, kind)
	}
	return nil
}

// goLoad runs do from clients goroutines for pgbenchTurn, each call with
// a number of its own.
func goLoad(do func(i int64) error) func(b *testing.B, clients int) float64 {
	var n atomic.Int64
	return func(b *testing.B, clients int) float64 {
		var sent atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range clients {
			wg.Go(func() {
				for time.Since(start) < pgbenchTurn {
					if err := do(n.Add(1)); err != nil {
						b.Error(err)
						return
					}
					sent.Add(1)
				}
			})
		}
		wg.Wait()
		return float64(sent.Load()) / time.Since(start).Seconds()
	}
}

// pgbenchScripts is the directory of the raw baselines'
// scripts (IDEM_PGBENCH_DIR, or ../shared/bench/pg beside the checkout); the
// benchmark skips without them, pgbench or psql.
func pgbenchScripts(b *testing.B) string {
	dir := os.Getenv("IDEM_PGBENCH_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "bench", "pg")
	}
	if _, err := os.Stat(filepath.Join(dir, "d_replay.sql")); err != nil {
		b.Skipf("pgbench's scripts: %v (set IDEM_PGBENCH_DIR)", err)
	}
	for _, tool := range []string{"pgbench", "psql"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skip(err)
		}
	}
	return dir
}

// pgbenchEnv points psql and pgbench at db's schema.
func pgbenchEnv(db *testDB) []string {
	return append(os.Environ(), "PGOPTIONS=-c search_path="+db.schema)
}

// pgbenchSchema creates pgbench's table in db's schema and loads its
// million completed rows, as run.sh does (schema.sql, reset.sql; with
// IDEM_PGBENCH_SCHEMA=schema_indexed.sql, the table with the driver's
// partial indexes, as run.sh's SCHEMA does).
func pgbenchSchema(b *testing.B, db *testDB, dir string) {
	if _, err := db.pool.Exec(context.Background(), "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{db.schema}.Sanitize()); err != nil {
		b.Fatal(err)
	}
	schema := os.Getenv("IDEM_PGBENCH_SCHEMA")
	if schema == "" {
		schema = "schema.sql"
	}
	for _, f := range []string{schema, "reset.sql"} {
		cmd := exec.Command("psql", dsn(), "-q", "-v", "ON_ERROR_STOP=1", "-f", f)
		cmd.Dir, cmd.Env = dir, pgbenchEnv(db)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("psql -f %s: %v\n%s", f, err, out)
		}
	}
}

// pgbenchRun runs script from clients clients (-j 2 at most, as run.sh)
// for pgbenchTurn and returns its tps, without connection time.
func pgbenchRun(db *testDB, dir, script string) func(b *testing.B, clients int) float64 {
	return func(b *testing.B, clients int) float64 {
		cmd := exec.Command("pgbench", "-n", "-M", "prepared", "-T", strconv.Itoa(int(pgbenchTurn/time.Second)),
			"-c", itoa(clients), "-j", itoa(min(2, clients)), "-f", filepath.Join(dir, script+".sql"), dsn())
		cmd.Env = pgbenchEnv(db)
		out, err := cmd.CombinedOutput()
		if err == nil {
			for _, line := range strings.Split(string(out), "\n") {
				if v, ok := strings.CutPrefix(line, "tps = "); ok {
					tps, err := strconv.ParseFloat(strings.Fields(v)[0], 64)
					if err == nil {
						return tps
					}
				}
			}
			err = errors.New("no tps line")
		}
		b.Fatalf("pgbench %s: %v\n%s", script, err, out)
		return 0
	}
}
