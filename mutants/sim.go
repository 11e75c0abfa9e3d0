package mutants

// simMutants plant bugs in the simulator's checkers (sim/, cmd/simrun) and
// in the linearizability models (linearizability/): the code that decides
// whether a run broke SPEC §6, which nothing else checks. Each weakens one
// rule, so that a bug of the product it was written to see passes; the
// area's own tests (go test ./sim/ ./cmd/simrun/ ./linearizability/) must
// show that every rule still fires on a planted bug. Four weaken the
// reference model the lifecycle checker holds writes to
// (internal/refmodel, where its rules moved with issue 21): they kept
// their IDs, and their area is the model's (mutants/cmd/mutate/areas.go).
var simMutants = []Mutant{
	// ---- sim/check.go: fencing, incarnations, replays, the end state ----
	{
		ID: "sim-fencing-skips-delete", File: "sim/check.go",
		Old:    "if kind != core.WriteInsert && prev.Exists() && prev.Token != expectToken {",
		New:    "if kind == core.WriteUpdate && prev.Exists() && prev.Token != expectToken {",
		Desc:   "the fencing check holds compare-and-sets to their expected token, but not deletes",
		Breaks: "§6.4 fencing (a stale owner's evict or a zombie's prune of another attempt's record)",
	},
	{
		ID: "sim-incarnation-keyed-by-new-token", File: "sim/check.go",
		Old:    "if f, ok := b.firstOf(prev.Token); ok {",
		New:    "if f, ok := b.firstOf(rec.Token); ok {",
		Desc:   "a failed_retryable record run again looks its incarnation up by the new attempt's token: every retry starts a new incarnation",
		Breaks: "§6.1 at most once (a second effect in one incarnation of the key passes as a retry past the TTL)",
	},
	{
		ID: "sim-replay-status-only", File: "sim/check.go",
		Old:    "} else if !sameResponse(first.response, a.response) {",
		New:    "} else if first.response.StatusCode != a.response.StatusCode {",
		Desc:   "a client's outcome is compared with the first one seen by its status only",
		Breaks: "§6.2 replay fidelity (a replay with another body or headers passes)",
	},
	{
		ID: "sim-final-skips-in-progress", File: "sim/check.go",
		Old:    "\t\tcase core.StatusInProgress:\n\t\t\tc.fail(5, scope, \"still %v after faults stopped %v ago\", rec.Status, fmtTime(w.now-w.healAt))\n\t\t\treturn\n\t\tcase core.StatusCompleted:",
		New:    "\t\tcase core.StatusCompleted:",
		Desc:   "the end state is checked for unknown records, not for records still in_progress",
		Breaks: "§6.5 no zombie (a lease nobody ever expires)",
	},
	// ---- sim/check_attempt.go ------------------------------------------
	{
		ID: "sim-lease-lost-ignores-conflict", File: "sim/check_attempt.go",
		Old:    "\tcase core.DecisionConflict, core.DecisionStale:",
		New:    "\tcase core.DecisionStale:",
		Desc:   "a heartbeat answered Conflict (the record no longer in progress) is not taken as a lost lease",
		Breaks: "§5 Heartbeat (lease loss told at once); §6.4 fencing (an attempt acts on after its record went unknown)",
	},
	// ---- sim/check_input.go --------------------------------------------
	{
		ID: "sim-header-check-reads-name", File: "sim/check_input.go",
		Old:    `if strings.ContainsAny(h.Value, "\r\n\x00") {`,
		New:    `if strings.ContainsAny(h.Name, "\r\n\x00") {`,
		Desc:   "the response-splitting rule looks for CR and LF in header names instead of values",
		Breaks: "§3 bad input rejected (invariant 9: a stored header value with CR LF passes)",
	},
	// ---- sim/check_live.go ---------------------------------------------
	{
		ID: "sim-extension-only-future", File: "sim/check_live.go",
		Old:    "if want := a.Now.Add(c.w.policy.LeaseDuration); a.Record.LockedUntil.Before(want) {",
		New:    "if want := a.Now.Add(c.w.policy.LeaseDuration); a.Record.LockedUntil.Before(a.Now) {",
		Desc:   "an Extended heartbeat is held to a lease not yet over, not to a whole lease from the store's now",
		Breaks: "§5 Heartbeat \"locked_until = now + lease\" (invariant 11)",
	},
	{
		ID: "sim-lease-cancel-by-first-lease", File: "sim/check_live.go",
		Old:    "\tif now.Before(c.leaseReckoned().Add(-margin)) {",
		New:    "\tif now.Before(c.firstEnd.Add(-c.reckoned - margin)) {",
		Desc:   "a cancellation for a lost lease is judged against the attempt's first lease, not the one its heartbeats extended it to",
		Breaks: "§5 Heartbeat (no cancel while the extended lease runs; invariant 11)",
	},
	{
		ID: "sim-success-kind-unchecked", File: "sim/check_live.go",
		Old:    "if (res.Kind != idem.ResultExecuted && res.Kind != idem.ResultReplayed) || res.Response.StatusCode < 200",
		New:    "if res.Response.StatusCode < 200",
		Desc:   "a success from Do is held to a sendable status only, not to being an execution or a replay",
		Breaks: "§6.7 fail closed (a success that is neither an execution nor a replay)",
	},
	{
		ID: "sim-inflight-known-by-status", File: "sim/check_live.go",
		Old:    "if !errors.As(err, &e) || e.Code != idem.CodeInProgress {",
		New:    "if !errors.As(err, &e) || e.Status != http.StatusConflict {",
		Desc:   "an in-flight answer is recognised by its 409 status, not its code: a 202 one is never checked",
		Breaks: "§5 Reserve in_progress (the in-flight status by the policy; invariant 11)",
	},
	// ---- sim/check_metrics.go ------------------------------------------
	{
		ID: "sim-recount-skips-zombie", File: "sim/check_metrics.go",
		Old:    "idem.CounterReserveFailedRetry, idem.CounterReserveUnknown, idem.CounterZombieKey, idem.CounterReconcileScheduled,",
		New:    "idem.CounterReserveFailedRetry, idem.CounterReserveUnknown, idem.CounterReconcileScheduled,",
		Desc:   "the recount leaves zombie_key out of the counters it compares",
		Breaks: "§7 metrics (invariant 12)",
	},
	{
		ID: "sim-recount-only-too-many", File: "sim/check_metrics.go",
		Old:    "if g, want := got(k), r.n[k]; g != want {",
		New:    "if g, want := got(k), r.n[k]; g > want {",
		Desc:   "a counter is reported only when it counts more than the recount, not fewer",
		Breaks: "§7 metrics (invariant 12: a counter that misses events passes)",
	},
	// ---- sim/check_payload.go ------------------------------------------
	{
		ID: "sim-fingerprint-owner-keyed-by-reference", File: "sim/check_payload.go",
		Old:    "c.payload.owner[fp] = req.fp",
		New:    "c.payload.owner[req.fp] = fp",
		Desc:   "the owners of fingerprints are keyed by the request's reference fingerprint, not by the one the server computed",
		Breaks: "§3 domain separation; §6.3 no cross-payload (two requests sharing a fingerprint pass)",
	},
	// ---- sim/check_table.go --------------------------------------------
	{
		ID: "sim-table-failed-expiry-skipped", File: "sim/check_table.go",
		Old:    "\t\tcase core.StatusCompleted, core.StatusFailedRetryable:\n\t\t\texpired := due(now, before.ExpiresAt)",
		New:    "\t\tcase core.StatusCompleted:\n\t\t\texpired := due(now, before.ExpiresAt)",
		Desc:   "the reserve's expiry boundary is checked on completed records, not on failed_retryable ones",
		Breaks: "§5 Reserve row 1 (past expires_at → execute); invariant 10",
	},
	{
		ID: "sim-due-early-return", File: "sim/check_table.go",
		Old:    "\t\tif !ok || !due(now, at) {\n\t\t\tcontinue\n\t\t}",
		New:    "\t\tif !ok {\n\t\t\tcontinue\n\t\t}\n\t\tif !due(now, at) {\n\t\t\treturn\n\t\t}",
		Desc:   "the Due listing check stops at the first record not yet due",
		Breaks: "§5 Due (every due record listed); invariant 10, §6.5 no zombie",
	},
	{
		ID: "sim-due-limit-off-by-one", File: "sim/check_table.go",
		Old:    "if len(recs) >= limit || !exact {",
		New:    "if len(recs) >= limit-1 || !exact {",
		Desc:   "a Due listing one short of its limit is taken as cut short by the limit",
		Breaks: "§5 Due (every due record listed, up to the limit); invariant 10",
	},
	// ---- sim/check_store.go, sim/check_event.go and the reference model they use
	// (internal/refmodel) ------------------------------------------------
	{
		ID: "sim-abandoned-trusts-record", File: "sim/check_store.go",
		Old:    "return rec.ReconcileAfter.IsZero() && rec.ReconcileAttempts >= max && *l.counter(scope) >= max",
		New:    "return rec.ReconcileAfter.IsZero() && rec.ReconcileAttempts >= max",
		Desc:   "an unknown record counts as given up by its own attempt count, not by the still-unknown answers the store applied",
		Breaks: "§6.5 no zombie (an unknown record left unscheduled passes as abandoned)",
	},
	{
		ID: "sim-version-bump-any", File: "sim/check_store.go",
		Old:    "if x.kind == core.WriteUpdate && after.Version != prev.Version+1 {",
		New:    "if x.kind == core.WriteUpdate && after.Version <= prev.Version {",
		Desc:   "an update is held to raising the version, not to raising it by exactly one",
		Breaks: "§4 version bumped by one on every write; invariant 8",
	},
	{
		ID: "sim-abandon-past-max", File: "internal/refmodel/resolve.go",
		Old:    "\tif r.ReconcileAttempts >= c.p.ReconcileAttemptsMax {",
		New:    "\tif r.ReconcileAttempts > c.p.ReconcileAttemptsMax {",
		Desc:   "the checkers' reference model gives a record up one still-unknown answer past the policy's maximum",
		Breaks: "§5 Resolve still unknown (given up at exactly attempts_max); invariant 8",
	},
	{
		ID: "sim-unchanged-skips-mark-unknown", File: "sim/check_store.go",
		Old:    "\tcase got.Write.Kind == core.WriteNone && want.Write.Kind != core.WriteNone:",
		New:    "\tcase got.Write.Kind == core.WriteNone && want.Write.Kind != core.WriteNone && ev.Kind != core.EventMarkUnknown:",
		Desc:   "an owner's MarkUnknown that wrote nothing on its in_progress record is not reported",
		Breaks: "§5 MarkUnknown (in_progress → unknown); invariant 8",
	},
	{
		ID: "sim-bindsat-off-by-one", File: "internal/refmodel/reserve.go",
		Old:    "\t\treturn now.Before(rec.ExpiresAt)\n\t}\n\treturn false",
		New:    "\t\treturn !now.After(rec.ExpiresAt)\n\t}\n\treturn false",
		Desc:   "the checkers' reference model holds a settled record to its key at the very instant of its expires_at",
		Breaks: "§5 Reserve row 1 (now >= expires_at → execute); invariant 8",
	},
	{
		ID: "sim-resolve-finding-token-dropped", File: "sim/check_event.go",
		Old:    "ev.Verdict, ev.Token, ev.Response = f.verdict, f.token, f.response",
		New:    "ev.Verdict, ev.Response = f.verdict, f.response",
		Desc:   "a Resolve is not held to the attempt its reconciler's Check was about",
		Breaks: "§5 Resolve (fenced by the attempt's token); §6.4 fencing",
	},
	{
		ID: "sim-heartbeat-too-long-allowed", File: "internal/refmodel/diff.go",
		Old:    "\tcase !want.LockedUntil.Equal(got.LockedUntil):",
		New:    "\tcase got.LockedUntil.Before(want.LockedUntil):",
		Desc:   "a written lease is held to ending no earlier than the reference model's, not exactly then: a heartbeat may extend it past now + lease",
		Breaks: "§5 Heartbeat \"locked_until = max(locked_until, now + lease)\"; invariant 8",
	},
	// ---- internal/refmodel/diff.go: the checkers' response comparison ---
	{
		ID: "sim-same-response-header-count", File: "internal/refmodel/diff.go",
		Old:    "\tfor i := range a {\n\t\tif a[i] != b[i] {\n\t\t\treturn false\n\t\t}\n\t}\n",
		New:    "",
		Desc:   "the checkers' response comparison counts the headers instead of comparing them",
		Breaks: "§6.2 replay fidelity (a replay with other header values passes)",
	},
	// ---- cmd/simrun ----------------------------------------------------
	{
		ID: "sim-simrun-exit-first-seed", File: "cmd/simrun/main.go",
		Old:    "\tfor _, r := range reports {\n\t\tif len(r.Violations) > 0 {\n\t\t\treturn 1\n\t\t}\n\t}\n\treturn 0",
		New:    "\tif len(reports[0].Violations) > 0 {\n\t\treturn 1\n\t}\n\treturn 0",
		Desc:   "simrun's exit status is the first seed's: a violation in a later seed exits 0",
		Breaks: "every §6 invariant, as make sim and CI read it",
	},
	// ---- linearizability -----------------------------------------------
	{
		ID: "lin-holds-ignores-token", File: "linearizability/lifecyclemodel.go",
		Old:    "return rec.Exists() && rec.Version == w.ExpectVersion && rec.Token == w.ExpectToken",
		New:    "return rec.Exists() && rec.Version == w.ExpectVersion",
		Desc:   "the lifecycle model applies an ambiguous write whose expected token is stale (the version matches)",
		Breaks: "§6.4 fencing; invariant 0, the store's linearizability",
	},
	// ---- sim/server.go: the world's injectors -------------------------
	{
		ID: "sim-pause-freezes-last-server", File: "sim/server.go",
		Old:    "\t\tif o != s && s.w.now >= o.pausedUntil {\n\t\t\treturn true",
		New:    "\t\tif o != s {\n\t\t\treturn true",
		Desc:   "a pause may freeze the last server running: the whole cluster frozen, its backlog served in one burst",
		Breaks: "the world's cost bound of issue 21 §4 (server.mayPause): a seed several times the median, for no reach",
	},
	{
		ID: "sim-backlog-unbounded", File: "sim/server.go",
		Old:    "\tif s.backlog >= most {",
		New:    "\tif s.backlog >= most && false {",
		Desc:   "a paused server holds every arrival: the attempts of a long pause served in one burst after their clients gave up",
		Breaks: "the world's cost bound of issue 21 §4 (server.hold, Config.BacklogMax): a fifth of a run's answers to nobody, for no reach",
	},
	{
		ID: "lin-holds-ignores-version", File: "linearizability/lifecyclemodel.go",
		Old:    "return rec.Exists() && rec.Version == w.ExpectVersion && rec.Token == w.ExpectToken",
		New:    "return rec.Exists() && rec.Token == w.ExpectToken",
		Desc:   "the lifecycle model applies an ambiguous write whose expected version is stale (a lost update)",
		Breaks: "§4 compare-and-set on (version, token); invariant 0, the store's linearizability",
	},
	{
		ID: "lin-life-indeterminate-dropped", File: "linearizability/check.go",
		Old:    "\t\tswitch op.Ended {\n\t\tcase EndedFailed:\n\t\t\tcontinue",
		New:    "\t\tswitch op.Ended {\n\t\tcase EndedFailed, EndedIndeterminate:\n\t\t\tcontinue",
		Desc:   "an ambiguous event is left out of the lifecycle history, as a failed one is",
		Breaks: "invariant 0, the store's linearizability (an ambiguous commit that applied is unexplained)",
	},
	{
		ID: "lin-recorder-indeterminate-as-failed", File: "linearizability/recorder.go",
		Old:    "case core.Refused(err): // bad input",
		New:    "case err != nil: // bad input",
		Desc:   "the recorder takes every failed Apply for one that wrote nothing, an ambiguous commit included",
		Breaks: "invariant 0, the store's linearizability (a write that applied is recorded as failed)",
	},
	{
		ID: "lin-digest-ignores-header-values", File: "linearizability/digest.go",
		Old:    "\t\th.str(hd.Name)\n\t\th.str(hd.Value)\n",
		New:    "\t\th.str(hd.Name)\n",
		Desc:   "the record digest leaves header values out: the store model takes a read with other header values for the stored record",
		Breaks: "invariant 0, the store's linearizability; §6.2 replay fidelity",
	},
}
