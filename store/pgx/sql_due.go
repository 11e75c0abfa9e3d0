package pgxstore

import (
	"fmt"
	"strings"
)

// The workers' statements: Due (listed, or claimed) and Prune. Each kind of
// due record reads only its partial index, most overdue first, so that a
// batch costs about the batch, not the table.

func sweepLeaseSQL(n *names) string {
	return `SELECT tenant, principal, use_case, idem_key, locked_until AS due FROM ` + n.qualified + `
		WHERE status = 'in_progress' AND locked_until <= statement_timestamp()`
}

func sweepExpirySQL(n *names) string {
	return `SELECT tenant, principal, use_case, idem_key, expires_at AS due FROM ` + n.qualified + `
		WHERE status IN ('completed', 'failed_retryable', 'expired') AND expires_at <= statement_timestamp()`
}

func reconcileSQL(n *names) string {
	return `SELECT tenant, principal, use_case, idem_key, reconcile_after AS due FROM ` + n.qualified + `
		WHERE status = 'unknown' AND reconcile_after IS NOT NULL AND reconcile_after <= statement_timestamp()`
}

// dueSQL lists at most @limit records of the parts, most overdue first.
// With claim, it skips what another instance claimed (or is claiming: SKIP
// LOCKED), and claims what it lists for this instance (@instance, for
// @claim_for), in the same statement. The instance's own claims do not hide
// a record from it: its Due lists what it has not handled yet again, as an
// unclaimed Due would.
func dueSQL(n *names, claim bool, parts ...string) string {
	var ctes, picks []string
	for i, p := range parts {
		if claim {
			p += ` AND (claimed_until IS NULL OR claimed_until <= statement_timestamp() OR claimed_by = @instance) ORDER BY due LIMIT @limit FOR UPDATE SKIP LOCKED`
		} else {
			p += ` ORDER BY due LIMIT @limit`
		}
		ctes = append(ctes, fmt.Sprintf("c%d AS (%s)", i, p))
		picks = append(picks, fmt.Sprintf("SELECT * FROM c%d", i))
	}
	pick := `WITH ` + strings.Join(ctes, ", ") + `, pick AS (` + strings.Join(picks, " UNION ALL ") + ` ORDER BY due LIMIT @limit)`
	if !claim {
		return pick + `
			SELECT r.tenant, r.principal, r.use_case, r.idem_key, ` + prefixed("r", recordColList) + ` FROM pick JOIN ` + n.qualified + ` AS r
			USING (tenant, principal, use_case, idem_key) ORDER BY pick.due`
	}
	return pick + `,
		up AS (UPDATE ` + n.qualified + ` AS r SET claimed_until = statement_timestamp() + @claim_for::interval, claimed_by = @instance FROM pick
			WHERE (r.tenant, r.principal, r.use_case, r.idem_key) = (pick.tenant, pick.principal, pick.use_case, pick.idem_key)
			RETURNING pick.due, r.tenant, r.principal, r.use_case, r.idem_key, ` + prefixed("r", recordColList) + `)
		SELECT tenant, principal, use_case, idem_key, ` + recordCols + ` FROM up ORDER BY due`
}

// pruneSQL deletes at most @limit tombstones past their retention, oldest
// first, from their own partial index; rows another transaction holds are
// skipped, not waited for, so a batch never queues behind a client. The
// rows come back with the statement's time, for the driver to check each
// against core.Step before it commits (see Prune).
func pruneSQL(n *names) string {
	return `WITH pick AS (SELECT tenant, principal, use_case, idem_key FROM ` + n.qualified + `
			WHERE status = 'expired' AND expires_at <= statement_timestamp()
			ORDER BY expires_at LIMIT @limit FOR UPDATE SKIP LOCKED),
		del AS (DELETE FROM ` + n.qualified + ` AS r USING pick
			WHERE (r.tenant, r.principal, r.use_case, r.idem_key) = (pick.tenant, pick.principal, pick.use_case, pick.idem_key)
			RETURNING r.tenant, r.principal, r.use_case, r.idem_key, r.waiters, ` + prefixed("r", recordColList) + `)
		SELECT statement_timestamp(), tenant, principal, use_case, idem_key, waiters, ` + recordCols + ` FROM del`
}
