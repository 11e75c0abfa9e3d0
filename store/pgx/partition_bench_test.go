package pgxstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
)

// BenchmarkPartitionedDo is Do's new key and replay at 16 clients on a
// plain table and on tables partitioned by day: 5 partitions (the legacy
// one, the current day, two ahead, the default) and 13 (ten ahead, as a
// table whose TTL and retention span about ten days would have): compare
// the req/s of each against the plain table's (BENCHMARKS.md, "time
// partitioning"). Every lookup of a key probes each partition.
func BenchmarkPartitionedDo(b *testing.B) {
	for _, replay := range []bool{false, true} {
		for _, ahead := range []int{-1, 2, 10} {
			name := fmt.Sprintf("replay=%v/partitions=%d", replay, map[bool]int{true: ahead + 3}[ahead >= 0])
			b.Run(name, func(b *testing.B) {
				db := newTestDBConns(b, int32(benchGoroutines(16)))
				var s *Store
				if ahead >= 0 {
					s = db.newPartitionedStore(b, Options{}, PartitionOptions{Ahead: ahead})
				} else {
					s = db.newStore(b, Options{})
				}
				benchDoOn(b, s, 16, replay)
			})
		}
	}
}

// dropRows is BenchmarkPartitionDrop's table size (IDEM_PG_DROP_ROWS,
// 1,000,000 by default; BENCHMARKS.md reports 10,000,000).
func dropRows(b *testing.B) int {
	if v := os.Getenv("IDEM_PG_DROP_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10_000 {
			b.Fatalf("IDEM_PG_DROP_ROWS=%q: a number of rows, at least 10000", v)
		}
		return n
	}
	return 1_000_000
}

// BenchmarkPartitionDrop removes a day of tombstones from a table of
// IDEM_PG_DROP_ROWS records over ten days of creation (the oldest day's
// tenth of them tombstones past their retention, the nine others
// completed records within their TTL), the same rows each way, in one
// run (make bench-pg-partitions, with -benchtime 1x: each way removes its
// day once):
//   - prune: Store.Prune in batches of 1,000 until the day is gone, on a
//     plain table (each row deleted, each checked against core.Step);
//   - drop: KeepPartitions on the table partitioned by day: every row of
//     the day read and stepped by the core, then one DROP TABLE (the nine
//     other days are held at their first row, not a tombstone).
//
// The metric is the seconds the removal took; the preloads are outside it.
func BenchmarkPartitionDrop(b *testing.B) {
	rows := dropRows(b)
	ctx := context.Background()
	p := core.PolicyDefault()
	b.Run("prune", func(b *testing.B) {
		db := newTestDB(b)
		s := db.newStore(b, Options{PollInterval: -1})
		preloadDays(b, db, s, rows)
		for b.Loop() {
			removed := 0
			for {
				n, err := s.Prune(ctx, &p, 1000)
				if err != nil {
					b.Fatal(err)
				}
				removed += n
				if n < 1000 {
					break
				}
			}
			if removed != rows/10 {
				b.Fatalf("pruned %d records, want the day's %d", removed, rows/10)
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/day")
	})
	b.Run("drop", func(b *testing.B) {
		db := newTestDB(b)
		po := PartitionOptions{}
		s := db.newPartitionedStore(b, Options{PollInterval: -1}, po)
		daily(b, db, s, &po)
		preloadDays(b, db, s, rows)
		for b.Loop() {
			rep, err := s.KeepPartitions(ctx, &p, po)
			if err != nil || len(rep.Dropped) != 1 || rep.DroppedRecords != rows/10 || len(rep.Held) != 9 {
				b.Fatalf("KeepPartitions: %+v, %v; want the day's %d records dropped, nine days held", rep, err, rows/10)
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/day")
	})
}

// daily lays a partitioned table out for BenchmarkPartitionDrop: the
// partitions of the ten past days (the legacy partition, empty, dropped).
func daily(b *testing.B, db *testDB, s *Store, po *PartitionOptions) {
	b.Helper()
	ctx := context.Background()
	if err := po.defaults(); err != nil {
		b.Fatal(err)
	}
	_, now, err := s.partitions(ctx)
	if err != nil {
		b.Fatal(err)
	}
	stmts := []string{`DROP TABLE ` + s.n.sibling(s.n.table+"_legacy")}
	for d := 10; d >= 1; d-- {
		stmts = append(stmts, createPartitionSQL(s.n, po, po.spanStart(now).Add(-time.Duration(d)*po.Span)))
	}
	for _, st := range stmts {
		if _, err := db.pool.Exec(ctx, st); err != nil {
			b.Fatal(err)
		}
	}
}

// preloadDays fills s's table with rows records created over the ten days
// before today, a tenth a day: the oldest day's tombstones past their
// retention, the others completed records within their TTL.
func preloadDays(b *testing.B, db *testDB, s *Store, rows int) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	for d := 10; d >= 1; d-- {
		status, expires := "completed", "1 day"
		if d == 10 {
			status, expires = "expired", "-1 hour"
		}
		_, err := db.pool.Exec(ctx, `INSERT INTO `+s.n.qualified+` (tenant, principal, use_case, idem_key, status, fingerprint, token, version,
				response_status, created_at, updated_at, completed_at, expires_at)
			SELECT '', 'merchant_' || (n % 1000), 'payments.create', md5(n::text) || '-day-' || $1::int, $2, decode(repeat('ab', 32), 'hex'),
				nextval(`+quoteLiteral(s.n.sequence)+`::regclass), 2, CASE WHEN $2 = 'completed' THEN 201 ELSE 0 END,
				date_trunc('day', now()) - $1::int * interval '1 day' + interval '1 hour', now(),
				date_trunc('day', now()) - $1::int * interval '1 day' + interval '1 hour', now() + $3::interval
			FROM generate_series(1, $4::int) AS n`, d, status, expires, rows/10)
		if err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.pool.Exec(ctx, `VACUUM ANALYZE `+s.n.qualified); err != nil {
		b.Fatal(err)
	}
	b.Logf("preloaded %d records in %v", rows, time.Since(start).Round(time.Second))
}

// BenchmarkPartitionConvert is Partition on a plain table of
// IDEM_PG_DROP_ROWS records (preloadDays' ten days) while a reader reads
// a record every 10 ms: the metrics are Partition's time and the longest
// the reader waited, which is the time the table was locked against every
// statement (the attach's check that each row belongs to its partition;
// the key it needs is built before, without blocking writes).
func BenchmarkPartitionConvert(b *testing.B) {
	rows := dropRows(b)
	ctx := context.Background()
	db := newTestDB(b)
	o := Options{PollInterval: -1, Schema: db.schema}
	s := db.newStore(b, o)
	preloadDays(b, db, s, rows)
	var longest time.Duration
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			sent := time.Now()
			if _, err := s.Load(ctx, core.Scope{Principal: "merchant_1", UseCase: "payments.create", Key: "0123456789abcdef-absent"}); err != nil {
				b.Error(err)
				return
			}
			longest = max(longest, time.Since(sent))
		}
	}()
	for b.Loop() {
		if err := Partition(ctx, db.pool, o, PartitionOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	close(stop)
	<-done
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/partition")
	b.ReportMetric(longest.Seconds(), "s-reader-waited")
}
