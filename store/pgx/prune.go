package pgxstore

import (
	"context"
	"fmt"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Prune deletes at most limit tombstones (expired records past their
// retention), oldest first, in one transaction of one batch, and returns how
// many it deleted. It is the batched form of what a sweeper does to each
// such record (Due, then a load and a fenced delete per record, two round
// trips each): one DELETE takes the batch from its partial index, skips rows
// another transaction holds rather than waiting for them, and holds the rows
// it deletes for the one statement and the commit.
//
// The core still decides. The statement returns every row it deleted with
// the database's time; before committing, Prune steps each with
// core.EventSweep at that time and requires the core's answer to be a prune
// (a delete under exactly the row's version and token). Any other answer is
// a driver bug: the transaction rolls back, nothing is deleted, and the
// error says which record. A service runs Prune in a loop beside its
// Sweeper (which then finds fewer tombstones to delete one by one) until it
// returns fewer than limit.
func (s *Store) Prune(ctx context.Context, p *core.Policy, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	if p == nil {
		d := core.PolicyDefault()
		p = &d
	}
	var n int
	err := s.ops().run(ctx, func() error {
		var err error
		n, err = s.prune(ctx, p, limit)
		return err
	})
	if err != nil {
		if store.DriverBug(err) {
			return 0, err
		}
		return 0, classify(ctx, "prune", err)
	}
	return n, nil
}

func (s *Store) prune(ctx context.Context, p *core.Policy, limit int) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after a commit it does nothing
	var v argv
	v[pLimit] = limit
	rows, err := tx.Query(ctx, s.sql.prune.sql, s.sql.prune.args(&v)...)
	if err != nil {
		return 0, err
	}
	var (
		now     time.Time
		sc      core.Scope
		waiters bool
		r       row
		n       int
		wake    []string
		bug     error
	)
	dest := r.dest([]any{&now, &sc.Tenant, &sc.Principal, &sc.UseCase, &sc.Key, &waiters})
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return 0, err
		}
		n++
		if bug != nil {
			continue
		}
		rec := core.Record{Scope: sc}
		if err := r.record(&rec); err != nil {
			bug = err
			continue
		}
		bug = checkPruned(&rec, p, now.UTC())
		if waiters {
			wake = append(wake, notifyPayload(&sc))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if bug != nil {
		return 0, bug // rolled back by the deferred Rollback
	}
	if len(wake) > 0 {
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, w) FROM unnest($2::text[]) AS w`, s.n.channel, wake); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	return n, nil
}

// checkPruned asks the core what a sweep of rec at now does, and requires
// it to be the delete the prune statement made.
func checkPruned(rec *core.Record, p *core.Policy, now time.Time) error {
	if d := sweepDecision(rec, p, now); d != core.DecisionPruned {
		return fmt.Errorf("pgxstore: driver bug: the prune statement deleted %s at %v, which core.Step does not prune (%v): %w",
			rec.Describe(), now, d, core.ErrInvalidRecord)
	}
	return nil
}

// sweepDecision is what core.Step decides for a sweep of rec at now:
// DecisionPruned only if it also deletes rec under exactly its version and
// token (DecisionInvalid: the core refused the step).
func sweepDecision(rec *core.Record, p *core.Policy, now time.Time) core.DecisionKind {
	step := *rec
	tr, err := core.Step(&step, &core.Event{Kind: core.EventSweep, Now: now}, p)
	switch {
	case err != nil:
		return core.DecisionInvalid
	case tr.Decision.Kind == core.DecisionPruned && (tr.Write.Kind != core.WriteDelete ||
		tr.Write.ExpectVersion != rec.Version || tr.Write.ExpectToken != rec.Token):
		return core.DecisionInvalid
	}
	return tr.Decision.Kind
}
