package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/store"
	pgxstore "github.com/idemkit/idem/store/pgx"
	redisstore "github.com/idemkit/idem/store/redis"
)

// globals are the flags before the command: which store, and how to print.
type globals struct {
	dsn, pgSchema, pgTable  string
	redisAddrs, redisPrefix string
	json                    bool
}

func (g *globals) flags(fs *flag.FlagSet) {
	fs.StringVar(&g.dsn, "dsn", "", "PostgreSQL connection string of the store (store/pgx's table)")
	fs.StringVar(&g.pgSchema, "pg-schema", "", "schema of the records table (default: the first of search_path)")
	fs.StringVar(&g.pgTable, "pg-table", "", "name of the records table (default: idem_records)")
	fs.StringVar(&g.redisAddrs, "redis", "", "the Redis store's server host:port, or a cluster's nodes comma-separated (store/redis)")
	fs.StringVar(&g.redisPrefix, "redis-prefix", "", "the Redis store's key prefix (its Options.Prefix; default idem)")
	fs.BoolVar(&g.json, "json", false, "print JSON (one document) instead of a table")
}

// operatorStore is what idemctl reads: a store that lists.
type operatorStore interface {
	store.Store
	store.Lister
}

// open connects to the store the flags name. It never migrates: an
// operator's tool does not change a schema.
func (g *globals) open(ctx context.Context) (operatorStore, func(), error) {
	switch {
	case g.dsn != "" && g.redisAddrs != "":
		return nil, nil, errors.New("two stores: give -dsn or -redis, not both")
	case g.redisAddrs != "":
		return g.openRedis(ctx)
	case g.dsn == "":
		return nil, nil, errors.New("no store: give -dsn or -redis")
	}
	pool, err := pgxpool.New(ctx, g.dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("-dsn: %w", err)
	}
	s, err := pgxstore.New(ctx, pool, pgxstore.Options{Schema: g.pgSchema, Table: g.pgTable})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return s, func() { s.Close(); pool.Close() }, nil
}

// openRedis connects to the Redis store: one server, or a cluster when
// several nodes are named (go-redis decides).
func (g *globals) openRedis(ctx context.Context) (operatorStore, func(), error) {
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(g.redisAddrs, ",")})
	s, err := redisstore.New(ctx, client, redisstore.Options{Prefix: g.redisPrefix})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return s, func() { s.Close(); client.Close() }, nil
}
