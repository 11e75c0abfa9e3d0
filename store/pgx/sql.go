package pgxstore

import (
	"fmt"
	"strings"
)

// recordColList are the columns of a core.Record beyond its scope, in the
// order scanRecord reads them; recordCols is the list as SQL.
var recordColList = []string{"status", "fingerprint", "token", "version", "response_status",
	"response_header_names", "response_header_values", "response_body", "response_schema_version",
	"last_error_code", "locked_until", "reconcile_after", "reconcile_attempts", "created_at",
	"completed_at", "expires_at"}

var recordCols = strings.Join(recordColList, ", ")

// scopeMatch selects a scope's row.
const scopeMatch = `tenant = @tenant AND principal = @principal AND use_case = @use_case AND idem_key = @idem_key`

// statements are the SQL texts of one table, built once at New from quoted
// names only: nothing a caller passes per call is ever put into SQL text.
// Each is written with named parameters (params.go) and bound once.
type statements struct {
	load, read, insert, reserve, insertNew, update, unfencedUpdate, delete, waitMark statement
	// updateIn is update with the record's created_at in its precondition
	// too, on a partitioned table: PostgreSQL then looks in the record's
	// partition only (update elsewhere).
	updateIn                                                  statement
	dueSweep, dueReconcile, claimSweep, claimReconcile, prune statement
	// lockScope is sent before each insert when the table is partitioned
	// (inserts.go); partitioned says whether it is.
	lockScope   statement
	partitioned bool
}

func newStatements(n *names, partitioned bool) statements {
	return statements{
		partitioned: partitioned, lockScope: bind(lockScopeSQL()),
		load: bind(loadSQL(n)), read: bind(readSQL(n)), insert: bind(insertSQL(n, partitioned)), reserve: bind(reserveSQL(n, partitioned)),
		insertNew: bind(insertNewSQL(n, partitioned)), update: bind(updateSQL(n, true)), unfencedUpdate: bind(updateSQL(n, false)),
		updateIn: bind(updateInSQL(n, partitioned)),
		delete:   bind(deleteSQL(n)), waitMark: bind(waitMarkSQL(n)),
		dueSweep: bind(dueSQL(n, false, sweepLeaseSQL(n), sweepExpirySQL(n))), dueReconcile: bind(dueSQL(n, false, reconcileSQL(n))),
		claimSweep: bind(dueSQL(n, true, sweepLeaseSQL(n), sweepExpirySQL(n))), claimReconcile: bind(dueSQL(n, true, reconcileSQL(n))),
		prune: bind(pruneSQL(n)),
	}
}

// recordValueList are the values of a record write, in recordColList's
// order: token is the token's SQL. Each time is the statement's time plus
// an offset, or a literal (see timeCol): statement_timestamp() is the
// database's clock, the same value throughout the statement.
func recordValueList(token string) []string {
	t := func(name string) string {
		return fmt.Sprintf("COALESCE(statement_timestamp() + @%s_offset::interval, @%s::timestamptz)", name, name)
	}
	return []string{"@status", "@fingerprint", token, "@version", "@response_status", "@header_names",
		"@header_values", "@body", "@schema_version", "@error_code", t("locked_until"), t("reconcile_after"),
		"@reconcile_attempts", t("created_at"), t("completed_at"), t("expires_at")}
}

// insertCols are the columns an insert names: the scope, the record, the
// time of the write.
func insertCols() string {
	return `(tenant, principal, use_case, idem_key, ` + recordCols + `, updated_at)`
}

// notifyIfWaited is the SQL of a boolean that is false, and that sends the
// notification (@channel, @payload) on the way when the row's waiters flag
// (as the statement sees the row it writes: after any concurrent write it
// waited for) is set. A write uses it to clear the flag: a Wait marks the
// row (waitMark) before it sleeps, and only a write to a marked row pays
// for a NOTIFY. PostgreSQL serialises the commits of every transaction that
// notifies (one lock, held through the commit's flush), so a NOTIFY on every
// write would cap the throughput of the whole database at one commit per
// flush; writes nobody waits for (a new key's reserve and completion, when
// no duplicate request came meanwhile) notify nothing.
func notifyIfWaited(flag string) string {
	return `CASE WHEN ` + flag + ` THEN (SELECT false FROM pg_notify(@channel, @payload)) ELSE false END`
}

func prefixed(alias string, cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = alias + "." + c
	}
	return strings.Join(parts, ", ")
}
