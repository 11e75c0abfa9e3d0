package pgxstore

import (
	"context"
	"fmt"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

var _ store.Auditor = (*Store)(nil)

func auditInsertSQL(n *names) string {
	return `INSERT INTO ` + n.audit + ` (tenant, principal, use_case, idem_key, at, who, why, event, verdict, decision, token, version)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`
}

func auditSelectSQL(n *names) string {
	return `SELECT at, who, why, event, verdict, decision, token, version FROM ` + n.audit + `
		WHERE tenant = $1 AND principal = $2 AND use_case = $3 AND idem_key = $4 ORDER BY id`
}

// ApplyAudited applies ev to a.Scope and, when the event wrote, inserts a
// into the audit table, in one transaction (store.Auditor): the row exists
// exactly when the write does. A commit that failed is ambiguous, as any.
func (s *Store) ApplyAudited(ctx context.Context, ev core.Event, p *core.Policy, a *store.Audit, out *store.Applied) error {
	if err := a.Validate(); err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return classify(ctx, "audit", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after a commit it does nothing
	if err := s.WithTx(tx).Apply(ctx, a.Scope, ev, p, out); err != nil {
		return err
	}
	if !store.Audited(a, out) {
		return nil // nothing written: the transaction holds no change
	}
	sc := &a.Scope
	if _, err := tx.Exec(ctx, auditInsertSQL(s.n), sc.Tenant, sc.Principal, sc.UseCase, sc.Key, a.At, a.Who, a.Why,
		a.Event.String(), a.Verdict.String(), a.Decision.String(), int64(a.Token), int64(a.Version)); err != nil {
		return classify(ctx, "audit", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return classify(ctx, "audit: commit", err)
	}
	return nil
}

// Audits returns scope's audit trail, oldest first (store.Auditor).
func (s *Store) Audits(ctx context.Context, scope core.Scope) ([]store.Audit, error) {
	rows, err := s.pool.Query(ctx, auditSelectSQL(s.n), scope.Tenant, scope.Principal, scope.UseCase, scope.Key)
	if err != nil {
		return nil, classify(ctx, "audits", err)
	}
	defer rows.Close()
	var out []store.Audit
	for rows.Next() {
		a := store.Audit{Scope: scope}
		var event, verdict, decision string
		var token, version int64
		if err := rows.Scan(&a.At, &a.Who, &a.Why, &event, &verdict, &decision, &token, &version); err != nil {
			return nil, classify(ctx, "audits", err)
		}
		a.Token, a.Version = core.Token(token), uint64(version)
		if a.Event, a.Verdict, a.Decision, err = parseAuditNames(event, verdict, decision); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, classify(ctx, "audits", err)
	}
	return out, nil
}

// parseAuditNames reads back the names the audit table keeps (the core's
// String of each); a name the core does not have is a row this package
// never wrote.
func parseAuditNames(event, verdict, decision string) (core.EventKind, core.Verdict, core.DecisionKind, error) {
	e, ok1 := byName(event, func(i uint8) string { return core.EventKind(i).String() })
	v, ok2 := byName(verdict, func(i uint8) string { return core.Verdict(i).String() })
	d, ok3 := byName(decision, func(i uint8) string { return core.DecisionKind(i).String() })
	if !ok1 || !ok2 || !ok3 {
		return 0, 0, 0, fmt.Errorf("pgxstore: audits: stored event %q, verdict %q, decision %q: %w", event, verdict, decision, core.ErrInvalidRecord)
	}
	return core.EventKind(e), core.Verdict(v), core.DecisionKind(d), nil
}

func byName(name string, nameOf func(uint8) string) (uint8, bool) {
	for i := range uint8(64) {
		if nameOf(i) == name {
			return i, true
		}
	}
	return 0, false
}
