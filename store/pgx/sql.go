package pgxstore

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// recordCols are the columns of a core.Record beyond its scope, in the
// order scanRecord reads them.
const recordCols = `status, fingerprint, token, version, response_status, response_header_names, response_header_values,
	response_body, response_schema_version, last_error_code, locked_until, reconcile_after, reconcile_attempts,
	created_at, completed_at, expires_at`

const scopeMatch = `tenant = $1 AND principal = $2 AND use_case = $3 AND idem_key = $4`

// statements are the SQL texts of one table, built once at New from quoted
// names only: nothing a caller passes per call is ever put into SQL text.
type statements struct {
	load, insert, reserve, update, unfencedUpdate, delete string
	dueSweep, dueReconcile, claimSweep, claimReconcile    string
}

// Parameters of a record write ($5..$24), in this order: status,
// fingerprint, token, version, response status, header names, header
// values, body, schema version, last error code, then for each of
// locked_until, reconcile_after, created_at, completed_at, expires_at an
// offset from the statement's time and a literal (see timeCol), and
// reconcile_attempts. Times computed in SQL use statement_timestamp(): the
// database's clock, the same value throughout the statement.
func recordValues(now string) string {
	t := func(i int) string { return fmt.Sprintf("COALESCE(%s + $%d::interval, $%d::timestamptz)", now, i, i+1) }
	return fmt.Sprintf("$5, $6, %%s, $8, $9, $10, $11, $12, $13, $14, %s, %s, $25, %s, %s, %s",
		t(15), t(17), t(19), t(21), t(23))
}

func newStatements(n *names) statements {
	T := n.qualified
	var s statements
	fn := func(suffix string) string {
		if n.schema == "" {
			return pgx.Identifier{n.table + suffix}.Sanitize()
		}
		return pgx.Identifier{n.schema, n.table + suffix}.Sanitize()
	}
	s.load = `SELECT * FROM ` + fn("_load") + `($1, $2, $3, $4)`
	insertCols := `(tenant, principal, use_case, idem_key, ` + recordCols + `, updated_at)`
	s.insert = `WITH ins AS (INSERT INTO ` + T + ` ` + insertCols + `
		VALUES ($1, $2, $3, $4, ` + fmt.Sprintf(recordValues("statement_timestamp()"), "$7") + `, statement_timestamp()) RETURNING 1)
		SELECT 1 FROM ins, LATERAL (SELECT pg_notify($26, $27)) AS n`
	// reserve: insert if absent, else read what is there, with the clock and
	// a fresh token, in one round trip (see the migration's function).
	s.reserve = `SELECT * FROM ` + fn("_reserve") + `($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
		$15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)`
	// update writes under the precondition; when it does not hold, the same
	// round trip returns the record as it is (as of the statement's
	// snapshot), so that a lost race costs one more statement, not two.
	set := func(fenced bool) string {
		where := scopeMatch
		if fenced {
			where += ` AND version = $28 AND token = $29`
		}
		vals := strings.Split(fmt.Sprintf(recordValues("statement_timestamp()"), "$7"), ", ")
		cols := strings.Split(strings.Join(strings.Fields(recordCols), " "), ", ")
		var b strings.Builder
		for i := range cols {
			fmt.Fprintf(&b, "%s = %s, ", cols[i], joinCoalesce(vals, i))
		}
		return `WITH up AS (UPDATE ` + T + ` SET ` + b.String() + `updated_at = statement_timestamp()
			WHERE ` + where + ` RETURNING ` + recordCols + `)
			SELECT true, statement_timestamp(), ` + prefixed("up", recordCols) + ` FROM up, LATERAL (SELECT pg_notify($26, $27)) AS n
			UNION ALL
			SELECT false, statement_timestamp(), ` + prefixed("r", recordCols) + ` FROM ` + T + ` AS r
				WHERE r.` + strings.ReplaceAll(scopeMatch, "AND ", "AND r.") + ` AND NOT EXISTS (SELECT FROM up)`
	}
	s.update, s.unfencedUpdate = set(true), set(false)
	s.delete = `WITH del AS (DELETE FROM ` + T + ` WHERE ` + scopeMatch + ` AND version = $5 AND token = $6 RETURNING 1)
		SELECT 1 FROM del, LATERAL (SELECT pg_notify($7, $8)) AS n`

	// Due: each kind reads only its partial index, most overdue first, so
	// that a batch costs about the batch, not the table.
	sweepLease := `SELECT tenant, principal, use_case, idem_key, locked_until AS due FROM ` + T + `
		WHERE status = 'in_progress' AND locked_until <= statement_timestamp()`
	sweepExpiry := `SELECT tenant, principal, use_case, idem_key, expires_at AS due FROM ` + T + `
		WHERE status IN ('completed', 'failed_retryable', 'expired') AND expires_at <= statement_timestamp()`
	reconcile := `SELECT tenant, principal, use_case, idem_key, reconcile_after AS due FROM ` + T + `
		WHERE status = 'unknown' AND reconcile_after IS NOT NULL AND reconcile_after <= statement_timestamp()`
	list := func(parts ...string) string {
		var ctes []string
		var names []string
		for i, p := range parts {
			ctes = append(ctes, fmt.Sprintf("c%d AS (%s ORDER BY due LIMIT $1)", i, p))
			names = append(names, fmt.Sprintf("SELECT * FROM c%d", i))
		}
		return `WITH ` + strings.Join(ctes, ", ") + `, pick AS (` + strings.Join(names, " UNION ALL ") + ` ORDER BY due LIMIT $1)
			SELECT r.tenant, r.principal, r.use_case, r.idem_key, ` + prefixed("r", recordCols) + ` FROM pick JOIN ` + T + ` AS r
			USING (tenant, principal, use_case, idem_key) ORDER BY pick.due`
	}
	// claim: skip what another worker claimed (or is claiming: SKIP LOCKED),
	// and claim what is listed, in the same statement.
	claim := func(parts ...string) string {
		var ctes []string
		var names []string
		for i, p := range parts {
			ctes = append(ctes, fmt.Sprintf("c%d AS (%s AND (claimed_until IS NULL OR claimed_until <= statement_timestamp()) ORDER BY due LIMIT $1 FOR UPDATE SKIP LOCKED)", i, p))
			names = append(names, fmt.Sprintf("SELECT * FROM c%d", i))
		}
		return `WITH ` + strings.Join(ctes, ", ") + `, pick AS (` + strings.Join(names, " UNION ALL ") + ` ORDER BY due LIMIT $1),
			up AS (UPDATE ` + T + ` AS r SET claimed_until = statement_timestamp() + $2::interval FROM pick
				WHERE (r.tenant, r.principal, r.use_case, r.idem_key) = (pick.tenant, pick.principal, pick.use_case, pick.idem_key)
				RETURNING pick.due, r.tenant, r.principal, r.use_case, r.idem_key, ` + prefixed("r", recordCols) + `)
			SELECT tenant, principal, use_case, idem_key, ` + recordCols + ` FROM up ORDER BY due`
	}
	s.dueSweep, s.dueReconcile = list(sweepLease, sweepExpiry), list(reconcile)
	s.claimSweep, s.claimReconcile = claim(sweepLease, sweepExpiry), claim(reconcile)
	return s
}

// joinCoalesce returns the i-th value of a recordValues list, whose
// COALESCE(a, b) items the split on ", " cut in two.
func joinCoalesce(vals []string, i int) string {
	j := 0
	for k := 0; k < len(vals); k++ {
		v := vals[k]
		if strings.HasPrefix(v, "COALESCE(") {
			v += ", " + vals[k+1]
			k++
		}
		if j == i {
			return v
		}
		j++
	}
	panic("pgxstore: recordValues and recordCols disagree") // a programming error at init, caught by every test
}

func prefixed(alias, cols string) string {
	parts := strings.Split(strings.Join(strings.Fields(cols), " "), ", ")
	for i := range parts {
		parts[i] = alias + "." + parts[i]
	}
	return strings.Join(parts, ", ")
}
