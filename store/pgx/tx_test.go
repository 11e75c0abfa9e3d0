package pgxstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// payments is the business table of the CompleteIn tests.
func payments(t *testing.T, db *testDB) string {
	t.Helper()
	name := pgx.Identifier{db.schema, "payments"}.Sanitize()
	if _, err := db.pool.Exec(context.Background(), "CREATE TABLE IF NOT EXISTS "+name+" (idem_key text PRIMARY KEY, amount int NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	return name
}

func paymentExists(t *testing.T, db *testDB, table, key string) bool {
	t.Helper()
	var n int
	if err := db.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table+" WHERE idem_key = $1", key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func TestCompleteIn(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{})
	table := payments(t, db)
	ctx := context.Background()
	resp := idem.Response{StatusCode: 201, Body: []byte(`{"paid":true}`)}

	t.Run("commit-together", func(t *testing.T) {
		ex, _ := idem.New(s)
		req := idem.Request{Scope: testScope("tx-commit"), Fingerprint: testFP}
		r, err := ex.Do(ctx, req, func(ctx context.Context, at idem.Attempt) (idem.Response, error) {
			return resp, pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "INSERT INTO "+table+" VALUES ($1, 100)", req.Scope.Key); err != nil {
					return err
				}
				return at.CompleteIn(ctx, s.WithTx(tx), resp)
			})
		})
		if err != nil || !r.Recorded {
			t.Fatalf("Do: %+v %v", r, err)
		}
		snap, _ := s.Load(ctx, req.Scope)
		if snap.Record.Status != core.StatusCompleted || !paymentExists(t, db, table, req.Scope.Key) {
			t.Fatalf("after commit: %s, payment %v", snap.Record.Describe(), paymentExists(t, db, table, req.Scope.Key))
		}
	})
	t.Run("fenced-completion-rolls-back-the-business-write", func(t *testing.T) {
		ex, _ := idem.New(s)
		p := core.PolicyDefault()
		sc := testScope("tx-fenced")
		var completeErr error
		_, _ = ex.Do(ctx, idem.Request{Scope: sc, Fingerprint: testFP}, func(actx context.Context, at idem.Attempt) (idem.Response, error) {
			// Meanwhile the attempt loses its token: marked unknown, found
			// not executed by the reconciler, taken by another attempt.
			var a store.Applied
			for _, ev := range []core.Event{{Kind: core.EventMarkUnknown, Token: at.Token},
				{Kind: core.EventResolve, Token: at.Token, Verdict: core.VerdictNotExecuted},
				{Kind: core.EventReserve, Fingerprint: testFP}} {
				if err := store.Apply(ctx, s, sc, ev, &p, &a); err != nil {
					return idem.Response{}, err
				}
			}
			completeErr = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "INSERT INTO "+table+" VALUES ($1, 100)", sc.Key); err != nil {
					return err
				}
				return at.CompleteIn(ctx, s.WithTx(tx), resp) // refused: BeginFunc rolls back
			})
			return idem.Response{}, completeErr
		})
		if completeErr == nil {
			t.Fatal("CompleteIn of a fenced-off attempt succeeded")
		}
		if paymentExists(t, db, table, sc.Key) {
			t.Fatal("the business row of a refused completion is there after the rollback")
		}
	})
	t.Run("crash-before-commit-then-reconcile", func(t *testing.T) {
		// The process that runs the attempt dies between the business
		// write and the commit: its connection closes. (Store calls as
		// Do and CompleteIn make them: a process that dies makes no more.)
		p := core.PolicyDefault()
		p.LeaseDuration = 50 * time.Millisecond
		sc := testScope("tx-crash")
		var a store.Applied
		if err := store.Apply(ctx, s, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP}, &p, &a); err != nil {
			t.Fatal(err)
		}
		token := a.Record.Token
		conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
		if err != nil {
			t.Fatal(err)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+table+" VALUES ($1, 100)", sc.Key); err != nil {
			t.Fatal(err)
		}
		err = store.Apply(ctx, s.WithTx(tx), sc, core.Event{Kind: core.EventComplete, Token: token, Response: resp}, &p, &a)
		if err != nil || a.Transition.Decision.Kind != core.DecisionCompleted {
			t.Fatalf("completion in the transaction: %v %v", a.Transition.Decision.Kind, err)
		}
		_ = conn.PgConn().Conn().Close() // the crash: the socket closes, no COMMIT
		if paymentExists(t, db, table, sc.Key) {
			t.Fatal("the business write of a crashed transaction is visible")
		}
		snap, err := s.Load(ctx, sc)
		if err != nil || snap.Record.Status != core.StatusInProgress {
			t.Fatalf("after the crash: %s %v, want in_progress (the completion died with the transaction)", snap.Record.Describe(), err)
		}
		survivor, _ := idem.New(s, idem.WithPolicy(p))
		sweeper, _ := survivor.Sweeper()
		reconciler, _ := survivor.Reconciler(func(ctx context.Context, rec idem.Record) (idem.Finding, error) {
			var n int
			err := db.pool.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE idem_key = $1", rec.Scope.Key).Scan(&n)
			if err != nil || n > 0 {
				return idem.Finding{Verdict: core.VerdictExecuted, Response: resp}, err
			}
			return idem.Finding{Verdict: core.VerdictNotExecuted}, nil
		})
		// The lease runs out on the database's clock; then the key is unknown
		// and the reconciler settles it.
		for snap.Record.Status != core.StatusFailedRetryable {
			if _, err := sweeper.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := reconciler.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if snap, err = s.Load(ctx, sc); err != nil {
				t.Fatal(err)
			}
			if snap.Record.Status == core.StatusCompleted {
				t.Fatalf("the reconciler found an execution that never committed: %s", snap.Record.Describe())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if snap.Record.LastErrorCode != core.ErrorCodeReconciled {
			t.Fatalf("settled as %s", snap.Record.Describe())
		}
	})
}
