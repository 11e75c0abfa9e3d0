package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem/store"
	pgxstore "github.com/idemkit/idem/store/pgx"
)

// globals are the flags before the command: which store, and how to print.
type globals struct {
	dsn, pgSchema, pgTable string
	json                   bool
}

func (g *globals) flags(fs *flag.FlagSet) {
	fs.StringVar(&g.dsn, "dsn", "", "PostgreSQL connection string of the store (store/pgx's table)")
	fs.StringVar(&g.pgSchema, "pg-schema", "", "schema of the records table (default: the first of search_path)")
	fs.StringVar(&g.pgTable, "pg-table", "", "name of the records table (default: idem_records)")
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
	if g.dsn == "" {
		return nil, nil, errors.New("no store: give -dsn")
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
