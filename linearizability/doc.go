// Package linearizability checks idem's store drivers against the core's own
// specification, with porcupine (github.com/anishathalye/porcupine): a
// driver that is not linearizable breaks "at most once" in ways no example
// test finds.
//
// # Histories and words
//
// A history is what the callers of a store saw, one operation per call:
// a StoreOperation is one call of a Store method (its Kind is a
// store.Method), a LifecycleOperation one event applied to one scope. Each
// records how the call ended, an Ending: EndedOK, EndedConflict (a write's
// precondition did not hold), EndedFailed (known to have had no effect) or
// EndedIndeterminate (its effect is unknown, as Jepsen says). A Recorder
// makes both histories from a live store. CheckStoreHistory and
// CheckLifecycleHistory check one and return a Report: porcupine's result
// (Report.Check), the offending scopes, an explanation and a drawing. The
// words of core's glossary keep their meaning here: an outcome is the
// response of an attempt that executed, a verdict the reconciler's finding.
//
// # Models
//
// Two porcupine models, both partitioned by scope (a history of many scopes
// is checked one scope at a time, in parallel):
//
//   - StoreModel is the sequential specification of a store.Store: Load
//     reads exactly the stored record with a fresh token greater than every
//     token a load of the scope handed out before, deleted records included;
//     Insert succeeds if and only if there is no record; CompareAndSet and
//     Delete succeed if and only if the record has the expected version and
//     token. Loads compare every field of the record (times at the driver's
//     resolution, ModelOptions.TimeResolution), not only version and token.
//   - LifecycleModel is the lifecycle of one scope: its state is the record,
//     and its step is core.Step itself, on a copy of the record, with the
//     event as the store applied it (the store's time, and the fresh token
//     for a reserve). An operation is accepted only if the core gives exactly
//     the observed status before, decision, write and record after. There is
//     no second copy of the transition table: a history is linearizable if
//     and only if some order of its events, consistent with real time,
//     replays through the core into what every caller saw.
//
// # Ambiguity
//
// Some calls end without telling their caller what happened: a store error
// or a context deadline after a write was sent (an ambiguous commit). They
// are recorded with EndedIndeterminate and checked as porcupine's etcd test
// checks calls without a response: their return time is Pending (infinity),
// so porcupine may linearize them at any instant after their call, even
// after the caller gave up (a database may commit a write its client timed
// out on), and the step accepts them whether their precondition holds or not
// (if it holds the write applies; placing the call last, where nothing
// observes it, is "never applied"). The models stay deterministic, which
// porcupine's Model requires: no set of possible states is needed.
//
// For the lifecycle the write must be known to be replayed. When an event
// goes through load-step-write (store.Op), the Recorder knows the record and
// precondition of the write that may have applied, and the check is exact.
// When an Applier's Apply fails, neither the store's time nor the write is
// known: the scope's record becomes unknown to the model until the next
// operation that observed a record, which resynchronises it (the check is
// weaker there, never wrong). Calls known to have had no effect (a failed
// load, a refused write, an event the core refused) are left out.
//
// # The conformance suite
//
// The driver conformance suite, RunStoreSuite, lives in package
// store/storetest, beside the driver contract: it builds histories with a
// Recorder and checks them here. This package links no test framework, so
// that the simulator's command can use it.
//
// # Reading the visualization
//
// Open the HTML file in a browser. Each row is a client (a goroutine; the
// sweeper and the reconciler have their own), each bar an operation from
// its call to its return, labelled with the operation: for example
// "cas(if v3 t17: completed v4 t17 fp=… resp=201/19B #1a2b) → ok" or
// "reserve fp=… fresh=t21 @12:00:00.000000123 → execute token=21, insert ⇒
// in_progress v1 t21" (#1a2b is a digest of the whole record). An ambiguous
// operation's bar runs to the end. Rows named "scope n" give the scope of
// each drawn partition; only the offending scopes are drawn. Marks on the
// bars are linearization points of the longest partial linearizations
// porcupine found: black is legal, red is an operation that could not come
// next. Hovering over a bar shows the model's state before and after it (the
// record, and for a store the highest token handed out); "jump to first
// error" goes to where the longest linearization stops. Report.Explanation
// says the same in text, in the test log.
//
// # Histories from elsewhere
//
// The simulator (cmd/simrun -lincheck) builds StoreOperation or
// LifecycleOperation values from its own event log, on virtual time, and
// calls CheckStoreHistory or CheckLifecycleHistory; a Report that is not OK
// is a failure, porcupine.Unknown included. See the example.
package linearizability
