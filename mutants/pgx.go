package mutants

// pgxMutants plant bugs in the PostgreSQL driver (store/pgx): its Go code,
// the SQL it builds, and its migrations (embedded files, which the go
// command's -overlay replaces like any source file).
var pgxMutants = []Mutant{
	// ---- preconditions -------------------------------------------------
	{
		ID: "pgx-cas-version-from-record", File: "store/pgx/ops.go",
		Old:    "\tv[pExpectVersion], v[pExpectToken] = int64(expectVersion), int64(expectToken)\n\tst := &o.s.sql.update\n",
		New:    "\tv[pExpectVersion], v[pExpectToken] = int64(w.rec.Version-1), int64(expectToken)\n\tst := &o.s.sql.update\n",
		Desc:   "the compare-and-set expects the new record's version minus one, not the caller's expected version",
		Breaks: "Store.CompareAndSet (exactly expectVersion); §2 compare-and-set on the version; §6.4 fencing",
	},
	{
		ID: "pgx-delete-stale-version", File: "store/pgx/sql_write.go",
		Old:    "AND version = @expect_version AND token = @expect_token RETURNING waiters)",
		New:    "AND version >= @expect_version AND token = @expect_token RETURNING waiters)",
		Desc:   "Delete removes a record at the expected version or any later one: a stale deleter wins",
		Breaks: "Store.Delete (exactly expectVersion); §6.1 at most once (a lost update of a newer attempt)",
	},
	// ---- notifications -------------------------------------------------
	{
		ID: "pgx-delete-no-notify", File: "store/pgx/sql_write.go",
		Old:    "SELECT ` + notifyIfWaited(\"del.waiters\") + ` FROM del`",
		New:    "SELECT ` + notifyIfWaited(\"false\") + ` FROM del`",
		Desc:   "a delete never notifies: a waiter on an evicted, hard-expired or swept tombstone waits for its poll",
		Breaks: "Store.Wait (returns when the record is deleted); doc.go Notifications (every write to a marked row notifies)",
	},
	{
		ID: "pgx-prune-no-notify", File: "store/pgx/prune.go",
		Old:    "\t\tif waiters {\n\t\t\twake = append(wake, notifyPayload(&sc))\n\t\t}\n",
		New:    "",
		Desc:   "Prune deletes marked rows without notifying their waiters",
		Breaks: "Store.Wait (returns when the record is deleted); doc.go Notifications",
	},
	{
		ID: "pgx-rows-born-marked", File: "store/pgx/migrations/0002_waiters_claims_prune.up.sql",
		Old:    "ADD COLUMN waiters boolean NOT NULL DEFAULT false,",
		New:    "ADD COLUMN waiters boolean NOT NULL DEFAULT true,",
		Desc:   "every row is born marked as waited for: the first write of every key notifies, and commits serialise on the notification lock",
		Breaks: "doc.go Notifications (a write notifies only when a Wait marked its row)",
	},
	// ---- whose clock ---------------------------------------------------
	{
		ID: "pgx-load-host-clock", File: "store/pgx/ops.go",
		Old:    "\tsnap.Now, snap.FreshToken = now.UTC(), core.Token(tok)\n",
		New:    "\tsnap.Now, snap.FreshToken = time.Now().UTC(), core.Token(tok)\n",
		Desc:   "Load returns the host's clock instead of the database's",
		Breaks: "store.Snapshot.Now (the store's clock, so that servers with skewed clocks agree on leases and TTLs)",
	},
	{
		ID: "pgx-read-first-transaction-clock", File: "store/pgx/sql_write.go",
		Old:    "\treturn `SELECT statement_timestamp(), ` + recordCols + ` FROM ` + n.qualified + ` WHERE ` + scopeMatch\n",
		New:    "\treturn `SELECT now(), ` + recordCols + ` FROM ` + n.qualified + ` WHERE ` + scopeMatch\n",
		Desc:   "ReadFirst's read takes the transaction's start (now()) as its time: in a caller's transaction leases and TTLs are judged on a stale clock",
		Breaks: "doc.go Time (every lifecycle time is the statement's); §5 Reserve in_progress rows (now >= locked_until)",
	},
	{
		ID: "pgx-load-transaction-clock", File: "store/pgx/migrations/0003_header_values_bytea.up.sql",
		Old:    "  SELECT clock_timestamp(), nextval('idem_records_token_seq'), r.status,",
		New:    "  SELECT now(), nextval('idem_records_token_seq'), r.status,",
		Desc:   "the load function reads the transaction's start (now()) for the clock: a Load in a caller's transaction is at a stale time",
		Breaks: "store.Snapshot.Now; doc.go Time; §5 leases and TTLs",
	},
	{
		ID: "pgx-load-ignores-tenant", File: "store/pgx/migrations/0003_header_values_bytea.up.sql",
		Old:    "    ON r.tenant = p_tenant AND r.principal = p_principal",
		New:    "    ON r.principal = p_principal",
		Desc:   "the load function finds a record by principal, use case and key, not the tenant: one tenant loads another's record",
		Breaks: "§3 scope (the same key in another tenant is an unrelated record); §6.3 no cross-payload",
	},
	// ---- tokens --------------------------------------------------------
	{
		ID: "pgx-reserve-template-token", File: "store/pgx/apply.go",
		Old:    "\targs := o.s.sql.reserve.args(t.w.fill(&v, nil))\n",
		New:    "\targs := o.s.sql.reserve.args(t.w.fill(&v, int64(t.rec.Token)))\n",
		Desc:   "a new key's reserve stores the template's stand-in token (1) instead of the sequence's",
		Breaks: "§4 fencing token never reused, even after the record was pruned and the key reused; §6.4 fencing",
	},
	{
		ID: "pgx-retry-stand-in-token", File: "store/pgx/apply.go",
		Old:    "\tif tr.Write.Kind == core.WriteNone {\n\t\treturn nil\n\t}\n\treturn o.loop(ctx, scope, ev, p, out)\n",
		New:    "\tif tr.Write.Kind == core.WriteNone {\n\t\treturn nil\n\t}\n\treturn o.compareAndSet(ctx, &out.Record, tr.Write.ExpectVersion, tr.Write.ExpectToken)\n",
		Desc:   "a reserve that writes over an existing record (a retry after a failure) keeps the stand-in token, the record's + 1, instead of loading one from the sequence",
		Breaks: "store.Snapshot.FreshToken (greater than every token handed out); §6.4 fencing",
	},
	{
		ID: "pgx-fresh-token-32-bit", File: "store/pgx/ops.go",
		Old:    "\tvar tok int64\n",
		New:    "\tvar tok int32\n",
		Desc:   "Load scans the fresh token into 32 bits: once the sequence passes 2^31 every load fails",
		Breaks: "§4 fencing tokens are 64-bit (core.Token); Store.Load",
	},
	{
		ID: "pgx-token-sequence-32-bit", File: "store/pgx/migrations/0001_create_records.up.sql",
		Old:    "CREATE SEQUENCE idem_records_token_seq AS bigint MINVALUE 1 NO CYCLE;",
		New:    "CREATE SEQUENCE idem_records_token_seq AS integer MINVALUE 1 NO CYCLE;",
		Desc:   "the token sequence is 32-bit: after 2^31 - 1 tokens no key can be loaded or reserved",
		Breaks: "§4 fencing tokens are 64-bit (core.Token); the token column is bigint",
	},
	{
		ID: "pgx-prune-rewinds-sequence", File: "store/pgx/prune.go",
		Old:    "\tif err := tx.Commit(ctx); err != nil {\n\t\treturn 0, err\n\t}\n\treturn n, nil\n",
		New:    "\tif _, err := tx.Exec(ctx, `SELECT setval($1::regclass, COALESCE((SELECT max(token) FROM `+s.n.qualified+`), 0) + 1, false)`, s.n.sequence); err != nil {\n\t\treturn 0, err\n\t}\n\tif err := tx.Commit(ctx); err != nil {\n\t\treturn 0, err\n\t}\n\treturn n, nil\n",
		Desc:   "Prune winds the token sequence back to just past the largest token left, reclaiming the pruned records' tokens",
		Breaks: "§4 \"never reused for a scope, even after the record was pruned and the key reused\"; §6.4 fencing",
	},
	// ---- Due and Prune -------------------------------------------------
	{
		ID: "pgx-due-kinds-unordered", File: "store/pgx/sql_due.go",
		Old:    "strings.Join(picks, \" UNION ALL \") + ` ORDER BY due LIMIT @limit)`",
		New:    "strings.Join(picks, \" UNION ALL \") + ` LIMIT @limit)`",
		Desc:   "Due(sweep) fills a batch with ended leases first and ended TTLs after, not the most overdue of both first",
		Breaks: "Store.Due (most overdue first); §6.5 no zombie (a busy sweeper starves the TTLs)",
	},
	{
		ID: "pgx-claim-hides-own", File: "store/pgx/sql_due.go",
		Old:    "claimed_until <= statement_timestamp() OR claimed_by = @instance)",
		New:    "claimed_until <= statement_timestamp())",
		Desc:   "with DueClaim a Store's own claims hide records from it: what it listed and did not handle waits for the claim to end",
		Breaks: "Options.DueClaim (its own Due still lists what it claimed); Store.Due (a record nobody writes stays due)",
	},
	{
		ID: "pgx-claim-waits-for-locks", File: "store/pgx/sql_due.go",
		Old:    "ORDER BY due LIMIT @limit FOR UPDATE SKIP LOCKED`",
		New:    "ORDER BY due LIMIT @limit FOR UPDATE`",
		Desc:   "Due with DueClaim waits for rows another transaction holds instead of skipping them: the sweeper queues behind a client",
		Breaks: "Options.DueClaim (rows another transaction holds are skipped, FOR UPDATE SKIP LOCKED)",
	},
	{
		ID: "pgx-prune-unordered", File: "store/pgx/sql_due.go",
		Old:    "\t\t\tORDER BY expires_at LIMIT @limit FOR UPDATE SKIP LOCKED),",
		New:    "\t\t\tLIMIT @limit FOR UPDATE SKIP LOCKED),",
		Desc:   "Prune deletes any tombstones past their retention, not the oldest first",
		Breaks: "Store.Prune (oldest first)",
	},
	{
		ID: "pgx-unset-time-not-null", File: "store/pgx/record.go",
		Old:    "\tif t.IsZero() {\n\t\treturn timeCol{}\n\t}\n\treturn timeCol{lit:",
		New:    "\treturn timeCol{lit:",
		Desc:   "an unset time is written as 0001-01-01, not NULL: an abandoned record (reconcile_after unset) is due for reconciliation for ever",
		Breaks: "§5 Resolve past the maximum \"stays unknown, for an operator\"; Store.Due(reconcile) (a non-zero ReconcileAfter)",
	},
	{
		ID: "pgx-due-reconcile-null-test", File: "store/pgx/sql_due.go",
		Old:        "WHERE status = 'unknown' AND reconcile_after IS NOT NULL AND reconcile_after <= statement_timestamp()`",
		New:        "WHERE status = 'unknown' AND reconcile_after <= statement_timestamp()`",
		Desc:       "Due(reconcile) leaves out its reconcile_after IS NOT NULL",
		Breaks:     "none",
		Equivalent: "NULL <= x is NULL, never true, so no unscheduled record is listed; and the strict <= implies IS NOT NULL, so the planner still matches the partial index",
	},
	// ---- errors and retries --------------------------------------------
	{
		ID: "pgx-retry-rollback-class", File: "store/pgx/errors.go",
		Old:    "(pe.Code == codeSerializationFailure || pe.Code == codeDeadlock)",
		New:    "strings.HasPrefix(pe.Code, \"40\")",
		Desc:   "every transaction rollback (SQLSTATE class 40) is sent again, 40003 statement_completion_unknown among them",
		Breaks: "Options.SerializationRetries (40001 and 40P01 only); core/doc.go contract 7 (an unknown outcome is never retried blindly)",
	},
	{
		ID: "pgx-retries-default-none", File: "store/pgx/store.go",
		Old:    "\tif o.SerializationRetries <= 0 {\n",
		New:    "\tif o.SerializationRetries < 0 {\n",
		Desc:   "the zero SerializationRetries (the default) retries nothing instead of 3 times",
		Breaks: "Options.SerializationRetries (\"3 if zero\")",
	},
	// ---- the held path and the check of written rows --------------------
	{
		ID: "pgx-held-unfenced", File: "store/pgx/apply.go",
		Old:    "&got, o.s.opt.unfencedCompletion)",
		New:    "&got, true)",
		Desc:   "ApplyHeld writes the core's step of the held record without its precondition, over whatever the row has become",
		Breaks: "store.HeldApplier (under held's version and token); §6.4 fencing",
	},
	{
		ID: "pgx-row-check-status-version", File: "store/pgx/apply.go",
		Old:    "\tif !sameRecord(&out.Record, got) {\n",
		New:    "\tif out.Record.Status != got.Status || out.Record.Version != got.Version {\n",
		Desc:   "the check of a written row against core.Step compares only its status and version",
		Breaks: "doc.go Round trips (any difference between the row and core.Step is a driver bug); §6.8",
	},
	{
		ID: "pgx-row-check-rounds", File: "store/pgx/record.go",
		Old:    "return x.Truncate(time.Microsecond).Equal(y.Truncate(time.Microsecond))",
		New:    "return x.Round(time.Microsecond).Equal(y.Round(time.Microsecond))",
		Desc:   "the check of a written row rounds times to the microsecond where PostgreSQL truncates: a policy duration with a sub-microsecond part is a driver bug on every write",
		Breaks: "doc.go Values (times kept to the microsecond); §5 every write of such a policy refused",
	},
	// ---- migrations and names ------------------------------------------
	{
		ID: "pgx-dollar-tag-schema-only", File: "store/pgx/render.go",
		Old:    "strings.Contains(n.schema, tag) || strings.Contains(n.table, tag)",
		New:    "strings.Contains(n.schema, tag)",
		Desc:   "the function bodies' dollar-quote tag is checked against the schema name only: a table name holding it ends a body",
		Breaks: "Options (\"names ... always quoted\"); Migrate",
	},
	// ---- a caller's transaction ----------------------------------------
	{
		ID: "pgx-tx-statements-outside", File: "store/pgx/tx.go",
		Old:    "func (t *TxStore) ops() ops { return ops{s: t.s, q: t.tx, tx: true} }",
		New:    "func (t *TxStore) ops() ops { return ops{s: t.s, q: t.s.pool, tx: true} }",
		Desc:   "the transaction-bound store runs its statements on the pool: a completion commits outside the caller's transaction",
		Breaks: "TxStore (business write and completion commit together or not at all); §6.1 at most once",
	},
	{
		ID: "pgx-tx-retried", File: "store/pgx/tx.go",
		Old:    "func (t *TxStore) ops() ops { return ops{s: t.s, q: t.tx, tx: true} }",
		New:    "func (t *TxStore) ops() ops { return ops{s: t.s, q: t.tx} }",
		Desc:   "a statement in a caller's transaction is retried after a serialization failure, in the transaction that failure aborted",
		Breaks: "WithTx (\"statements are never retried in it\"); the caller sees 25P02 instead of its serialization failure",
	},
	// ---- Wait and the reserve ------------------------------------------
	{
		ID: "pgx-wait-trusts-notify", File: "store/pgx/wait.go",
		Old:    "\t\ttimer := time.NewTimer(jitter(interval))\n",
		New:    "\t\ttimer := time.NewTimer(jitter(interval))\n\t\tif wake != nil {\n\t\t\ttimer.Stop() // notified of every write\n\t\t}\n",
		Desc:   "Wait with a listener trusts notifications and never polls: a Wait on an absent record, or one whose notification was lost, sleeps to its deadline",
		Breaks: "Options.PollInterval (a lost notification only delays a waiter); Store.Wait",
	},
	{
		ID: "pgx-reserve-no-on-conflict", File: "store/pgx/sql_write.go",
		Old:    "\t\t\tON CONFLICT DO NOTHING RETURNING ` + recordCols + `)",
		New:    "\t\t\tRETURNING ` + recordCols + `)",
		Desc:   "the one-statement reserve has no ON CONFLICT: of two reserves of a new key at once the loser fails with a unique violation instead of reading the winner's record",
		Breaks: "store.Applier (Apply behaves as the load-step-write loop: the loser is InFlight); §6.7 fail closed only on outages",
	},
	{
		ID: "pgx-prune-trusts-statement", File: "store/pgx/prune.go",
		Old:    "\t\tbug = checkPruned(&rec, p, now.UTC())\n",
		New:    "\t\t_ = checkPruned(&rec, p, now.UTC()) // the statement picked it\n",
		Desc:   "Prune trusts its statement: a deleted row the core would not prune commits instead of rolling the batch back",
		Breaks: "Store.Prune (\"the core still decides\"); doc.go Background work",
	},
	{
		ID: "pgx-readfirst-signal-inverted", File: "store/pgx/readfirst.go",
		Old:    "\tif found {\n\t\ttarget = foundOne\n\t}",
		New:    "\tif !found {\n\t\ttarget = foundOne\n\t}",
		Desc:   "the adaptive reserve counts misses as hits: retries pay for the insert-or-read, new keys for a read first (cost only: both ways end in core.Step)",
		Breaks: "issue 25 §1 (replays by default at a plain read's cost, new keys not paying for it)",
	},
}
