package mutants

// refMutants plant divergences in the reference model of the lifecycle
// (internal/refmodel): the second reading of SPEC §5, which core's
// property test holds the core to and the simulator's lifecycle checker
// holds every store write to. A model that drifts from the core, the core
// being right, must be caught by both: by the unit layer (core's
// TestCoreAgreesWithReferenceModel) and by the simulator (invariant 8 on a
// correct run).
var refMutants = []Mutant{
	{
		ID: "ref-inflight-at-lease-end", File: "internal/refmodel/reserve.go",
		Old:    "\t\tif !c.due(rec.LockedUntil) {\n\t\t\tc.answerAfter(core.DecisionInFlight",
		New:    "\t\tif !c.now.After(rec.LockedUntil) {\n\t\t\tc.answerAfter(core.DecisionInFlight",
		Desc:   "the model answers InFlight to a reserve at exactly locked_until: the lease read as over only after its instant",
		Breaks: "§5 Reserve in_progress rows (now >= locked_until → unknown); invariant 8",
	},
	{
		ID: "ref-expiry-sweep-late", File: "internal/refmodel/sweep.go",
		Old:    "(rec.Status == core.StatusCompleted || rec.Status == core.StatusFailedRetryable) && c.due(rec.ExpiresAt):",
		New:    "(rec.Status == core.StatusCompleted || rec.Status == core.StatusFailedRetryable) && c.now.After(rec.ExpiresAt):",
		Desc:   "the model's sweep leaves a settled record alone at exactly its expires_at",
		Breaks: "§5 Sweep (completed / failed_retryable past expires_at → expired); invariant 8",
	},
	{
		ID: "ref-fail-default-code", File: "internal/refmodel/owner.go",
		Old:    "c.becomeFailed(orDefault(string(c.ev.ErrorCode), codeNotExecuted))",
		New:    "c.becomeFailed(orDefault(string(c.ev.ErrorCode), codeUnknown))",
		Desc:   "the model's Fail without a code records outcome_unknown instead of not_executed",
		Breaks: "§4 last error code (core: Fail's default is not_executed); invariant 8",
	},
	{
		ID: "ref-backoff-doubles-once-more", File: "internal/refmodel/resolve.go",
		Old:    "\tfor n := attempts; n > 0 && wait < ceiling; n-- {",
		New:    "\tfor n := attempts + 1; n > 0 && wait < ceiling; n-- {",
		Desc:   "the model's reconcile backoff doubles once too often: base * 2^(n+1)",
		Breaks: "§5 Resolve still unknown (reconcile_after = now + backoff, base * 2^n capped); invariant 8",
	},
	{
		ID: "ref-fail-mode-swapped", File: "internal/refmodel/owner.go",
		Old:    "\t\tif c.p.Fail == core.FailEvict {",
		New:    "\t\tif c.p.Fail == core.FailKeep {",
		Desc:   "the model evicts a failed attempt's record when the policy keeps it, and keeps it when the policy evicts",
		Breaks: "§5 Fail (failed_retryable, or evicted, by policy); invariant 8",
	},
	{
		ID: "ref-abandon-one-early", File: "internal/refmodel/resolve.go",
		Old:    "\tif r.ReconcileAttempts >= c.p.ReconcileAttemptsMax {",
		New:    "\tif r.ReconcileAttempts+1 >= c.p.ReconcileAttemptsMax {",
		Desc:   "the model gives an unknown record up to an operator one still-unknown answer before the policy's maximum",
		Breaks: "§5 Resolve still unknown (past the policy's maximum it stays unknown for an operator); invariant 8",
	},
	{
		ID: "ref-tombstone-kept-for-ttl", File: "internal/refmodel/sweep.go",
		Old:    "r.ExpiresAt = c.now.Add(c.p.TombstoneRetention)",
		New:    "r.ExpiresAt = c.now.Add(c.p.TTL)",
		Desc:   "the model keeps a tombstone for the TTL instead of the policy's tombstone retention",
		Breaks: "§5 rule \"the tombstone is pruned after a retention\"; invariant 8",
	},
	{
		ID: "ref-resolve-evicts-by-fail-mode", File: "internal/refmodel/resolve.go",
		Old:    "\tcase c.ev.Verdict == core.VerdictNotExecuted:\n\t\tc.becomeFailed(codeReconciled)",
		New:    "\tcase c.ev.Verdict == core.VerdictNotExecuted && c.p.Fail == core.FailEvict:\n\t\tc.remove()\n\t\tc.answer(core.DecisionResolved)\n\tcase c.ev.Verdict == core.VerdictNotExecuted:\n\t\tc.becomeFailed(codeReconciled)",
		Desc:   "the model deletes a record the reconciler found not executed when the policy evicts failures (the fail mode is the owner's Fail's only)",
		Breaks: "§5 Resolve (not executed → failed_retryable); invariant 8",
	},
	{
		ID: "ref-heartbeat-shortens-lease", File: "internal/refmodel/owner.go",
		Old:    "if end := c.leaseEnd(); end.After(c.was.LockedUntil) {",
		New:    "if end := c.leaseEnd(); !end.IsZero() {",
		Desc:   "the model's heartbeat sets the lease to now + lease even when that shortens it (a store clock that stepped back)",
		Breaks: "§5 Heartbeat (a lease never shrinks); invariant 8",
	},
	{
		ID: "ref-completed-keeps-lease", File: "internal/refmodel/states.go",
		Old:    "\tr.LastErrorCode = \"\"\n\tr.LockedUntil = time.Time{}\n\tr.ReconcileAfter = time.Time{}\n\tr.CompletedAt = c.now",
		New:    "\tr.LastErrorCode = \"\"\n\tr.ReconcileAfter = time.Time{}\n\tr.CompletedAt = c.now",
		Desc:   "the model's completed record keeps the lease end of the attempt that completed it",
		Breaks: "§5 Complete / Resolve executed (a settled record is no longer leased); invariant 8",
	},
	{
		ID: "ref-unknown-hint-below-least", File: "internal/refmodel/reserve.go",
		Old:    "if at := rec.ReconcileAfter; !at.IsZero() && at.Sub(c.now) > wait {",
		New:    "if at := rec.ReconcileAfter; !at.IsZero() {",
		Desc:   "the model tells a client of an unknown key to come back at the reconciler's next look even when that is sooner than the policy's least Retry-After, or past",
		Breaks: "§5 Reserve unknown (409 + Retry-After, at least the policy's); invariant 8",
	},
	{
		ID: "ref-unknown-keeps-attempts", File: "internal/refmodel/states.go",
		Old:    "\tr.ReconcileAfter = c.now\n\tr.ReconcileAttempts = 0\n",
		New:    "\tr.ReconcileAfter = c.now\n",
		Desc:   "a record that becomes unknown again keeps, in the model, the still-unknown answers of its earlier unknown spell",
		Breaks: "§5 Resolve still unknown (attempts counted since the record became unknown); invariant 8",
	},
}
