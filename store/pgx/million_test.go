package pgxstore

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// preloadMillion fills s's table with 1,000,000 records in one statement
// per kind, as ../shared/bench/pg/reset.sql does for pgbench's table (whose
// schema is not the driver's): 600,000 completed records within their TTL
// (never due), 200,000 in_progress records whose lease ran out (due for a
// sweep) and 200,000 tombstones past their retention (due for a prune),
// oldest first in no particular key order. Tokens come from the sequence.
func preloadMillion(b *testing.B, db *testDB, s *Store) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	ins := `INSERT INTO ` + s.n.qualified + ` (tenant, principal, use_case, idem_key, status, fingerprint, token, version,
		response_status, response_body, locked_until, created_at, updated_at, completed_at, expires_at)
		SELECT '', 'merchant_' || (n % 1000), 'payments.create', md5(n::text) || $1, $2, decode(repeat('ab', 32), 'hex'),
			nextval(` + quoteLiteral(s.n.sequence) + `::regclass), 2, $3, $4, now() + $5::interval * (n % 1000 + 1), now() - interval '1 day', now(),
			now() - interval '1 day', now() + $6::interval * (n % 1000 + 1)
		FROM generate_series(1, $7::int) AS n`
	body := []byte(`{"paymentId":"p_1","status":"created"}`)
	for _, k := range []struct {
		suffix, status  string
		code            int32
		body            []byte
		locked, expires string
		rows            int
	}{
		{"-c", "completed", 201, body, "-1 second", "1 hour", 600_000},
		{"-l", "in_progress", 0, nil, "-1 second", "1 hour", 200_000},
		{"-t", "expired", 0, nil, "-1 second", "-1 second", 200_000},
	} {
		if _, err := db.pool.Exec(ctx, ins, k.suffix, k.status, k.code, k.body, k.locked, k.expires, k.rows); err != nil {
			b.Fatal(err)
		}
	}
	// completed rows have no lease; in_progress rows no completion.
	if _, err := db.pool.Exec(ctx, `UPDATE `+s.n.qualified+` SET locked_until = NULL WHERE status <> 'in_progress'`); err != nil {
		b.Fatal(err)
	}
	if _, err := db.pool.Exec(ctx, `VACUUM ANALYZE `+s.n.qualified); err != nil {
		b.Fatal(err)
	}
	b.Logf("preloaded 1,000,000 records in %v", time.Since(start).Round(time.Second))
}

// BenchmarkMillion sweeps and prunes over a table of 1,000,000 records
// (make bench-pg-million; not part of make test): one op is one batch, so
// ns/op should grow with the batch (compare batch=100 with batch=1000, and
// the ns/record metric), not with the table.
//   - due: Due(sweep, batch) alone (the same records each time);
//   - sweep: Due(sweep, batch) from its partial index, then the sweep of
//     each listed record as the executor's sweeper does it (load, step,
//     fenced write: two round trips a record);
//   - prune: one Prune(batch) of tombstones past their retention (one
//     statement for the batch, checked against core.Step, one commit).
func BenchmarkMillion(b *testing.B) {
	db := newTestDB(b)
	s := db.newStore(b, Options{})
	preloadMillion(b, db, s)
	ctx := context.Background()
	p := core.PolicyDefault()
	for _, batch := range []int{100, 1000} {
		b.Run("due/batch="+itoa(batch), func(b *testing.B) {
			for b.Loop() {
				recs, err := s.Due(ctx, store.DueSweep, batch)
				if err != nil || len(recs) != batch {
					b.Fatalf("Due: %d records, %v", len(recs), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/record")
		})
		b.Run("sweep/batch="+itoa(batch), func(b *testing.B) {
			records := 0
			for b.Loop() {
				recs, err := s.Due(ctx, store.DueSweep, batch)
				if err != nil || len(recs) != batch {
					b.Fatalf("Due: %d records, %v (the preload ran out?)", len(recs), err)
				}
				for _, r := range recs {
					var a store.Applied
					if err := store.Apply(ctx, s, r.Scope, core.Event{Kind: core.EventSweep}, &p, &a); err != nil {
						b.Fatal(err)
					}
					if a.Transition.Write.Kind == core.WriteNone { // a lease swept to unknown, or a tombstone pruned
						b.Fatalf("swept %s: %v, nothing written", r.Scope, a.Transition.Decision.Kind)
					}
				}
				records += len(recs)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(records), "ns/record")
		})
		b.Run("prune/batch="+itoa(batch), func(b *testing.B) {
			records := 0
			for b.Loop() {
				n, err := s.Prune(ctx, &p, batch)
				if err != nil || n != batch {
					b.Fatalf("Prune: %d, %v (the preload ran out?)", n, err)
				}
				records += n
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(records), "ns/record")
		})
	}
}
