// Command chaospg runs the chaos harness of store/pgx on the server of
// IDEM_PG_DSN (make chaos-pg; make test runs a short one) and exits non-zero
// on any violation.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem/store"
	pgxstore "github.com/idemkit/idem/store/pgx"
	"github.com/idemkit/idem/store/pgx/internal/chaos"
)

func main() {
	dsn := os.Getenv("IDEM_PG_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	cfg := chaos.Config{DSN: dsn, Out: os.Stdout}
	flag.IntVar(&cfg.Clients, "clients", 24, "concurrent clients, each retrying")
	flag.IntVar(&cfg.Keys, "keys", 200, "distinct keys")
	flag.DurationVar(&cfg.Faults, "faults", 20*time.Second, "how long the fault loop runs")
	flag.BoolVar(&cfg.Restart, "restart", false, "restart the server once, mid-run (pg_ctlcluster)")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "seed")
	span := flag.Duration("partition-span", 0, "partition the table by created_at in spans this long (pgxstore.Partition; 0: a plain table): new incarnations move rows between partitions under the faults")
	flag.Parse()
	cfg.Seed = *seed
	cfg.NewStore = func(ctx context.Context, pool *pgxpool.Pool, schema string) (store.Store, func(), error) {
		o := pgxstore.Options{Schema: schema, DueClaim: time.Second}
		if err := pgxstore.Migrate(ctx, pool, o); err != nil {
			return nil, nil, err
		}
		if *span > 0 {
			po := pgxstore.PartitionOptions{Span: *span, Ahead: int(max(cfg.Faults, time.Minute) / *span) + 10}
			if err := pgxstore.Partition(ctx, pool, o, po); err != nil {
				return nil, nil, err
			}
		}
		s, err := pgxstore.New(ctx, pool, o)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
	if *span > 0 {
		fmt.Printf("chaospg: the table partitioned by created_at, spans of %v\n", *span)
	}
	rep, err := chaos.Run(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaospg:", err)
		os.Exit(2)
	}
	rep.Print(os.Stdout, cfg)
	if len(rep.Violations) > 0 {
		os.Exit(1)
	}
}
