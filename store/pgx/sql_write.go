package pgxstore

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The statements of one record: load, read, insert, reserve, update,
// delete, and a Wait's mark.

// loadSQL calls the table's load function (migrations): the record, the
// database's time and a fresh token in one round trip.
func loadSQL(n *names) string {
	fn := pgx.Identifier{n.table + "_load"}
	if n.schema != "" {
		fn = pgx.Identifier{n.schema, n.table + "_load"}
	}
	return `SELECT * FROM ` + fn.Sanitize() + `(@tenant, @principal, @use_case, @idem_key)`
}

// readSQL is Options.ReadFirst's replay: a plain read by primary key.
func readSQL(n *names) string {
	return `SELECT statement_timestamp(), ` + recordCols + ` FROM ` + n.qualified + ` WHERE ` + scopeMatch
}

// insertSQL writes a new row. A new row has no waiter to wake (a Wait
// marks an existing row; one waiting on an absent record is served by its
// poll). On a partitioned table it writes nothing when the scope has a row
// (absentOnly): the caller sends it under the scope's lock.
func insertSQL(n *names, partitioned bool) string {
	values := `@tenant, @principal, @use_case, @idem_key, ` + strings.Join(recordValueList("@token"), ", ") + `, statement_timestamp()`
	if partitioned {
		return `INSERT INTO ` + n.qualified + ` ` + insertCols() + ` SELECT ` + values + absentOnly(n)
	}
	return `INSERT INTO ` + n.qualified + ` ` + insertCols() + ` VALUES (` + values + `) ` + onScopeConflict
}

// onScopeConflict is a plain table's insert's answer to a row of the
// scope: nothing written. It names the scope's key, so that a Store opened
// before Partition, whose statements are a plain table's, fails on the
// partitioned table (which has no unique index on the scope alone:
// SQLSTATE 42P10, ErrRejected) instead of inserting a second row.
const onScopeConflict = `ON CONFLICT (tenant, principal, use_case, idem_key) DO NOTHING`

// absentOnly is the WHERE clause of an insert into a partitioned table
// (partition.go), whose primary key includes created_at and so no longer
// keeps a scope to one row: the insert happens only when no partition has
// a row of the scope. It is right only under the scope's advisory lock
// (lockScopeSQL) and a snapshot taken after it, which READ COMMITTED gives
// each statement; under another isolation level the statement inserts
// nothing, and the lock's answer says why.
func absentOnly(n *names) string {
	return ` WHERE NOT EXISTS (SELECT FROM ` + n.qualified + ` WHERE ` + scopeMatch + `)
			AND current_setting('transaction_isolation') = 'read committed'`
}

// lockScopeSQL takes the scope's transaction-level advisory lock (the one
// the load function takes: the same hash) and answers the transaction's
// isolation level. Sent with an insert into a partitioned table in one
// batch (one round trip, one implicit transaction), it holds every other
// insert of the scope off until the batch commits.
func lockScopeSQL() string {
	return `SELECT current_setting('transaction_isolation') FROM (SELECT pg_advisory_xact_lock(hashtextextended(@idem_key,
		hashtextextended(@use_case, hashtextextended(@principal, hashtextextended(@tenant, 0)))))) AS l`
}

// reserveSQL inserts if absent, else reads what is there, in one plain
// statement and one round trip. The token of an inserted row is the
// sequence's next value, taken after the statement's snapshot (so it is
// greater than every token the snapshot shows for the scope, and than
// those of every deleted record). An existing row comes back as it is,
// with the clock and no token: a replay (or a key in flight, a mismatch)
// reads one row by its primary key and takes nothing from the sequence and
// no lock; the rare reserve that must write over an existing row (a retry
// after a failure or an expiry) loads it again for a fresh token. No row at
// all: another writer inserted after this statement's snapshot; the caller
// loads again.
//
// On a partitioned table the caller sends it under the scope's lock, and
// it inserts only in READ COMMITTED (absentOnly).
func reserveSQL(n *names, partitioned bool) string {
	token := `COALESCE(@token::bigint, nextval(` + quoteLiteral(n.sequence) + `::regclass))`
	absent, conflict := `WHERE NOT EXISTS (SELECT FROM cur)`, onScopeConflict
	if partitioned {
		absent, conflict = absent+` AND current_setting('transaction_isolation') = 'read committed'`, ""
	}
	return `WITH cur AS (SELECT ` + recordCols + ` FROM ` + n.qualified + ` WHERE ` + scopeMatch + `),
		ins AS (INSERT INTO ` + n.qualified + ` ` + insertCols() + `
			SELECT @tenant, @principal, @use_case, @idem_key, ` + strings.Join(recordValueList(token), ", ") + `, statement_timestamp()
			` + absent + `
			` + conflict + ` RETURNING ` + recordCols + `)
		SELECT true, statement_timestamp(), ` + prefixed("ins", recordColList) + ` FROM ins
		UNION ALL
		SELECT false, statement_timestamp(), ` + prefixed("cur", recordColList) + ` FROM cur`
}

// insertNewSQL is a reserve's plain insert, for traffic of new keys
// (readfirst.go): the record the core computed, with the sequence's next
// token (taken after the statement's snapshot, as reserveSQL's), returned
// as written. No row: the scope has a record, committed before the
// statement or by a concurrent insert it waited for; the caller reads it.
// PostgreSQL runs it as the simplest plan there is for a write, where the
// insert-or-read's CTE makes it set up a read and a union as well on every
// call.
//
// On a partitioned table the caller sends it under the scope's lock
// (absentOnly).
func insertNewSQL(n *names, partitioned bool) string {
	token := `nextval(` + quoteLiteral(n.sequence) + `::regclass)`
	values := `@tenant, @principal, @use_case, @idem_key, ` + strings.Join(recordValueList(token), ", ") + `, statement_timestamp()`
	if partitioned {
		return `INSERT INTO ` + n.qualified + ` ` + insertCols() + ` SELECT ` + values + absentOnly(n) + `
		RETURNING statement_timestamp(), ` + recordCols
	}
	return `INSERT INTO ` + n.qualified + ` ` + insertCols() + `
		VALUES (` + values + `)
		` + onScopeConflict + ` RETURNING statement_timestamp(), ` + recordCols
}

// updateSQL writes under the precondition (fenced; unfenced is the planted
// bug of a test) and returns the row as written. No row: the precondition
// did not hold, and nothing was written. A plain UPDATE, not one that also
// reads the record on a miss: that read (a CTE, a union and a second index
// scan, which only a miss runs) made every completion set up a plan three
// times the size, to save a round trip only on a lost race.
func updateSQL(n *names, fenced bool) string {
	where := scopeMatch
	if fenced {
		where += ` AND version = @expect_version AND token = @expect_token`
	}
	var set strings.Builder
	for i, v := range recordValueList("@token") {
		fmt.Fprintf(&set, "%s = %s, ", recordColList[i], v)
	}
	return `UPDATE ` + n.qualified + ` AS t SET ` + set.String() + `updated_at = statement_timestamp(),
			waiters = ` + notifyIfWaited("t.waiters") + `
		WHERE ` + where + ` RETURNING statement_timestamp(), ` + recordCols
}

// updateInSQL is updateSQL, fenced, with the created_at of the record
// the precondition names as well, on a partitioned table (the partition
// pruned at execution to the record's own); on a plain table it is
// updateSQL.
func updateInSQL(n *names, partitioned bool) string {
	sql := updateSQL(n, true)
	if !partitioned {
		return sql
	}
	i := strings.LastIndex(sql, " RETURNING ")
	return sql[:i] + ` AND created_at = @expect_created_at` + sql[i:]
}

// deleteSQL deletes under the precondition and wakes the row's waiters.
func deleteSQL(n *names) string {
	return `WITH del AS (DELETE FROM ` + n.qualified + ` WHERE ` + scopeMatch + ` AND version = @expect_version AND token = @expect_token RETURNING waiters)
		SELECT ` + notifyIfWaited("del.waiters") + ` FROM del`
}

// waitMarkSQL is a Wait's read, which marks the row so that its next write
// notifies, only if the record is still the one waited for. An UPDATE
// (never "read, then mark"): it waits for a concurrent write and looks at
// its result, so that no write slips between the read and the mark
// unnoticed. No row: the record changed (or is absent).
func waitMarkSQL(n *names) string {
	return `UPDATE ` + n.qualified + ` SET waiters = true WHERE ` + scopeMatch + ` AND version = @expect_version AND token = @expect_token RETURNING true`
}
