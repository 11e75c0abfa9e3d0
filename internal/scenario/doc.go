// Package scenario is the one reader of idem's datadriven scenarios
// (github.com/cockroachdb/datadriven): the files under testdata/ that show
// each protocol one call at a time, for a reader to learn it the way raft's
// testdata teaches raft. Three protocols, three runners, one format:
//
//	core/testdata/step   core.Step on one record           NewSteps
//	testdata/flow        the executor's Flow, hosted by hand NewFlows
//	store/testdata/op    store.Op, one store call a command  NewOps
//
// Each runner takes the core's StepFunc, so that the wasm core runs every
// file too (package wasmcore's Test*ScenariosThroughWasm) and must print
// the same.
//
// # Format
//
// A file opens with "# why: ...", the case it exists for (Walk refuses a
// file without it). Then commands, each followed by "----" and what it
// printed:
//
//	reserve fp=A at=1s
//	----
//	decision: execute token=1
//	write: insert
//	record: in_progress ...
//
// An argument is key=value; a value in double quotes is a Go string literal
// (code="card\x00declined"). Durations are Go's (1s, 1500ms); at= is an
// offset from T0 and sets the clock (the event's Now in a Step scenario,
// the store's clock in the others). An unknown command, an argument a
// command does not take, or a value that does not parse fails the test at
// its line: a typo never passes as a zero. After a change, go test -rewrite
// rewrites the expected output of every command from what the code does;
// review the diff.
//
// # Commands every runner takes
//
//	policy lease= ttl= retention= expiry=soft|hard fail=keep|evict
//	       backoff_base= backoff_cap= attempts_max= in_flight_wait=
//	       in_flight=conflict|accepted retry_after=
//	record [key=]
//	reserve|complete|fail|mark_unknown|heartbeat|resolve|sweep
//	       [at= fp= token= status= body= code= verdict=executed|not_executed|still_unknown key=]
//
// An event command steps its event on the scenario's record (Step), or
// applies it to the store as another actor would (Flow, Op: a sweeper, the
// reconciler, another client). fp=A is the fingerprint SHA-256("A"); key=
// names another key of Scope's tenant, principal and use case.
//
// # Flow commands (NewFlows)
//
//	begin flow=NAME fp= [key=]        Executor.Begin: the first effect
//	apply flow=NAME [error=unavailable|rejected|timeout [written]]
//	run flow=NAME status= body= | error=not_executed|failed|deadline|canceled [code=] | panic=
//	waited flow=NAME elapsed=         the wait ended (Flow.Waited)
//	gone flow=NAME                    the caller went away (Flow.Gone)
//	beat flow=NAME [error=unavailable|rejected|timeout]  a heartbeat, as Do's heart sends it
//	lease flow=NAME                   whether the lease is lost by now
//
// Each prints what the host did and what the Flow asks next ("effect: ...")
// or its answer ("answer: ...").
//
// # Op commands (NewOps)
//
//	op event=KIND [event command's arguments]  store.NewOp: "next: load"
//	call [error=unavailable|rejected|timeout [written]]
//
// call makes the Op's next store call and prints what the store did, the
// core's transition after a load, and "next: METHOD" or "done: ...".
// error= fails the call before it reaches the store, or with written after
// it was made (an ambiguous commit).
package scenario
