// Package flow is the executor's protocol: one request's way through the
// lifecycle as a state machine with no goroutine, clock or I/O of its own,
// as raft's RawNode sits under its Node. Package idem's Executor.Do is a
// host of it; so are the simulator (on virtual time) and the wasm module
// (for runtimes other than Go). It imports the standard library, the core
// and the store's contract only, and nothing that does I/O
// (TestFlowImportsNoIO), so that any host can carry it.
//
// A host's contract:
//
//  1. Fill a Config once (Config.Fill) and do not change it while a Flow
//     begun under it runs.
//  2. Begin each request's Flow (Config.Begin, or BeginIn to reuse one);
//     an invalid request is refused there, and nothing else happens.
//  3. Until Done, perform what Next returns and report it, exactly once,
//     before calling Next again: an EffectApply with Applied (or Gone if
//     the caller went away), an EffectRun with Ran, an EffectWait with
//     Waited (or Gone). A report the Flow does not expect ends it with an
//     error ("host out of step").
//  4. Apply events on the request's scope under Config.Policy, through
//     store.ApplyHeld when Effect.Held is set; an Effect.Detached apply is
//     the attempt's outcome: the caller's cancellation must not stop it,
//     and Effect.Timeout bounds it.
//  5. While an EffectRun's action runs, keep its Lease (Flow.Lease, from
//     when the reserve that granted it was sent): apply Lease.Event every
//     Lease.Interval, each bounded by Lease.BeatTimeout, report each with
//     Lease.Beaten, and cancel the action when Lease.Lost says so, at the
//     latest at Lease.TellBy.
//  6. At EffectAnswer, read Result; if Effect.Panic is set, the action
//     panicked and its key is recorded unknown: raise the panic again.
//
// The words (scope, attempt, lease, fencing token, settled) are the core's
// glossary (package core).
package flow
