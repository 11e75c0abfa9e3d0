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
	load, read, insert, reserve, update, unfencedUpdate, delete, waitMark string
	dueSweep, dueReconcile, claimSweep, claimReconcile, prune             string
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

// notifyIfWaited is the SQL of a boolean that is false, and that sends the
// notification ($channel, $payload) on the way when the row's waiters flag
// (as the statement sees the row it writes: after any concurrent write it
// waited for) is set. A write uses it to clear the flag: a Wait marks the
// row (waitMark) before it sleeps, and only a write to a marked row pays
// for a NOTIFY. PostgreSQL serialises the commits of every transaction that
// notifies (one lock, held through the commit's flush), so a NOTIFY on every
// write would cap the throughput of the whole database at one commit per
// flush; writes nobody waits for (a new key's reserve and completion, when
// no duplicate request came meanwhile) notify nothing.
func notifyIfWaited(flag, channel, payload string) string {
	return `CASE WHEN ` + flag + ` THEN (SELECT false FROM pg_notify(` + channel + `, ` + payload + `)) ELSE false END`
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
	// read: Options.ReadFirst's replay, a plain read by primary key.
	s.read = `SELECT statement_timestamp(), ` + recordCols + ` FROM ` + T + ` WHERE ` + scopeMatch
	insertCols := `(tenant, principal, use_case, idem_key, ` + recordCols + `, updated_at)`
	// insert: a new row has no waiter to wake (a Wait marks an existing
	// row; one waiting on an absent record is served by its poll).
	s.insert = `INSERT INTO ` + T + ` ` + insertCols + `
		VALUES ($1, $2, $3, $4, ` + fmt.Sprintf(recordValues("statement_timestamp()"), "$7") + `, statement_timestamp())`
	// reserve: insert if absent, else read what is there, in one plain
	// statement and one round trip. The token of an inserted row is the
	// sequence's next value, taken after the statement's snapshot (so it is
	// greater than every token the snapshot shows for the scope, and than
	// those of every deleted record). An existing row comes back as it is,
	// with the clock and no token: a replay (or a key in flight, a mismatch)
	// reads one row by its primary key and takes nothing from the sequence
	// and no lock; the rare reserve that must write over an existing row
	// (a retry after a failure or an expiry) loads it again for a fresh
	// token. No row at all: another writer inserted after this statement's
	// snapshot; the caller loads again.
	seq := quoteLiteral(n.sequence) + `::regclass`
	s.reserve = `WITH cur AS (SELECT ` + recordCols + ` FROM ` + T + ` WHERE ` + scopeMatch + `),
		ins AS (INSERT INTO ` + T + ` ` + insertCols + `
			SELECT $1, $2, $3, $4, ` + fmt.Sprintf(recordValues("statement_timestamp()"), "COALESCE($7::bigint, nextval("+seq+"))") + `, statement_timestamp()
			WHERE NOT EXISTS (SELECT FROM cur)
			ON CONFLICT DO NOTHING RETURNING ` + recordCols + `)
		SELECT true, statement_timestamp(), ` + prefixed("ins", recordCols) + ` FROM ins
		UNION ALL
		SELECT false, statement_timestamp(), ` + prefixed("cur", recordCols) + ` FROM cur`
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
		return `WITH up AS (UPDATE ` + T + ` AS t SET ` + b.String() + `updated_at = statement_timestamp(),
				waiters = ` + notifyIfWaited("t.waiters", "$26", "$27") + `
			WHERE ` + where + ` RETURNING ` + recordCols + `)
			SELECT true, statement_timestamp(), ` + prefixed("up", recordCols) + ` FROM up
			UNION ALL
			SELECT false, statement_timestamp(), ` + prefixed("r", recordCols) + ` FROM ` + T + ` AS r
				WHERE r.` + strings.ReplaceAll(scopeMatch, "AND ", "AND r.") + ` AND NOT EXISTS (SELECT FROM up)`
	}
	s.update, s.unfencedUpdate = set(true), set(false)
	s.delete = `WITH del AS (DELETE FROM ` + T + ` WHERE ` + scopeMatch + ` AND version = $5 AND token = $6 RETURNING waiters)
		SELECT ` + notifyIfWaited("del.waiters", "$7", "$8") + ` FROM del`
	// waitMark: a Wait's read, which marks the row so that its next write
	// notifies, only if the record is still the one waited for ($5, $6).
	// An UPDATE (never "read, then mark"): it waits for a concurrent write
	// and looks at its result, so that no write slips between the read and
	// the mark unnoticed. No row: the record changed (or is absent).
	s.waitMark = `UPDATE ` + T + ` SET waiters = true WHERE ` + scopeMatch + ` AND version = $5 AND token = $6 RETURNING true`

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
	// claim: skip what another instance claimed (or is claiming: SKIP
	// LOCKED), and claim what is listed for this instance ($3), in the same
	// statement. The instance's own claims do not hide a record from it: its
	// Due lists what it has not handled yet again, as an unclaimed Due would.
	claim := func(parts ...string) string {
		var ctes []string
		var names []string
		for i, p := range parts {
			ctes = append(ctes, fmt.Sprintf("c%d AS (%s AND (claimed_until IS NULL OR claimed_until <= statement_timestamp() OR claimed_by = $3) ORDER BY due LIMIT $1 FOR UPDATE SKIP LOCKED)", i, p))
			names = append(names, fmt.Sprintf("SELECT * FROM c%d", i))
		}
		return `WITH ` + strings.Join(ctes, ", ") + `, pick AS (` + strings.Join(names, " UNION ALL ") + ` ORDER BY due LIMIT $1),
			up AS (UPDATE ` + T + ` AS r SET claimed_until = statement_timestamp() + $2::interval, claimed_by = $3 FROM pick
				WHERE (r.tenant, r.principal, r.use_case, r.idem_key) = (pick.tenant, pick.principal, pick.use_case, pick.idem_key)
				RETURNING pick.due, r.tenant, r.principal, r.use_case, r.idem_key, ` + prefixed("r", recordCols) + `)
			SELECT tenant, principal, use_case, idem_key, ` + recordCols + ` FROM up ORDER BY due`
	}
	s.dueSweep, s.dueReconcile = list(sweepLease, sweepExpiry), list(reconcile)
	s.claimSweep, s.claimReconcile = claim(sweepLease, sweepExpiry), claim(reconcile)
	// prune: at most $1 tombstones past their retention, oldest first, from
	// their own partial index; rows another transaction holds are skipped,
	// not waited for, so a batch never queues behind a client. The rows come
	// back with the statement's time, for the driver to check each against
	// core.Step before it commits (see Prune).
	s.prune = `WITH pick AS (SELECT tenant, principal, use_case, idem_key FROM ` + T + `
			WHERE status = 'expired' AND expires_at <= statement_timestamp()
			ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED),
		del AS (DELETE FROM ` + T + ` AS r USING pick
			WHERE (r.tenant, r.principal, r.use_case, r.idem_key) = (pick.tenant, pick.principal, pick.use_case, pick.idem_key)
			RETURNING r.tenant, r.principal, r.use_case, r.idem_key, r.waiters, ` + prefixed("r", recordCols) + `)
		SELECT statement_timestamp(), tenant, principal, use_case, idem_key, waiters, ` + recordCols + ` FROM del`
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
