// Package core is the lifecycle of an idempotency key as a pure state
// machine: events in, decisions out. It holds every rule of the lifecycle in
// one place, and it is also the sequential specification that drivers are
// checked against. It reads no clock, draws no random number, starts no
// goroutine and performs no I/O: time is an input (Event.Now), and the same
// inputs always give the same output, natively and compiled to wasm.
//
// # Glossary
//
// One meaning per word, here and in every package of idem.
//
//   - scope: (tenant, principal, use case, key). Records are per scope; the
//     same key in another scope is an unrelated record.
//   - key: the client's Idempotency-Key, 16 to 255 bytes of printable ASCII,
//     generated at random by the client for one unit of work it may retry.
//   - fingerprint: SHA-256 over the semantic content of a request (package
//     fingerprint). Same fingerprint means same request.
//   - attempt: one execution of the caller's action for a scope, owned by
//     one fencing token.
//   - fencing token: the name of an attempt. The store hands out tokens that
//     grow for a scope and never repeat, for it or for any other scope; an
//     event carrying a token that does not own the record is stale and
//     changes nothing.
//   - lease: the time an attempt may run without news (Record.LockedUntil).
//     Heartbeats extend it. An expired lease never leads to re-execution: the
//     record becomes unknown.
//   - record: what the store keeps for a scope (Record). Absent is a status.
//   - incarnation: one life of a key's record, from the reserve that
//     creates it (CreatedAt) to its expiry, prune or deletion; the next
//     reserve starts another, with a fresh token. What binds (at most one
//     execution, one outcome replayed) is per incarnation.
//   - version: a counter bumped by every write of a record; with the token it
//     is the precondition of a conditional write (Write).
//   - outcome: the response of an attempt that executed, 4xx business
//     answers included.
//   - replay: answering a retry with the stored outcome, byte for byte.
//   - reconcile: settling an unknown record by asking the downstream system
//     whether the side effect happened (EventResolve).
//   - expire: the end of a settled record's TTL: soft (status expired) or
//     hard (deleted), by policy. Never applies to in_progress or unknown.
//   - sweep: the periodic event that enforces leases and TTLs.
//   - evict: an operator's removal of a settled record or a tombstone by
//     hand (EventEvict), fenced by its token; never of an in_progress or
//     unknown record, whose outcome is not known.
//   - tombstone: a soft-expired record: scope, fingerprint, token and times,
//     its response dropped; pruned by a sweep after the policy's
//     TombstoneRetention.
//   - error code: why a record is failed_retryable or unknown
//     (ErrorCode, in Record.LastErrorCode), carried by Fail, MarkUnknown and
//     a still-unknown Resolve: up to ErrorCodeBytesMax bytes of RFC 9110
//     token characters (ValidateErrorCode), so that every store keeps it
//     byte for byte. Not a code of idem.Error (idem.Code), which names how
//     the executor answered.
//   - refused: the core's answer to input it does not take (Refused: one of
//     its errors, nothing changed); store.BadInput is the caller's input the
//     core refused. Only the core refuses.
//   - rejected: a store's definite "no" to a write (store.ErrRejected: a
//     constraint, a column type, a driver bug), which the same write sent
//     again would get again. Not refused (the core's), and not an outage
//     (idem.ErrStoreRejected, 500, never a reason to execute).
//   - max: a ceiling (KeyBytesMax, Policy.KeyBytesMax, TTLMax). A package
//     ceiling and a policy's field of the same name: the field may narrow
//     the package's, never widen it.
//   - policy: the lifecycle's tunables (Policy), and nothing else.
//   - decision: what Step tells its caller to do (Decision).
//   - transition: what one Step returns: its decision and the write that
//     makes it durable (Transition).
//   - verdict: the reconciler's finding about an unknown attempt: executed,
//     not executed or still unknown (Verdict). A finding (idem.Finding) is a
//     verdict with, when executed, the outcome.
//
// Outside core:
//
//   - result: how Executor.Do answered a request with a response, executed
//     now or replayed (idem.Result).
//   - flow: one request's way through the executor as a state machine
//     (idem.Flow); an effect is one thing a flow asks of its host.
//   - op: one event applied to one scope by load, step and write, one store
//     call at a time (store.Op); what it did is an applied (store.Applied).
//   - method: one of a store's methods (store.Method), the one list of store
//     calls: what an op does next, what a history records, what a store
//     error names.
//   - labels: a counter's or a histogram's dimensions, use case, event and
//     decision (never a key, principal or tenant).
//   - answer: how Executor.Do answered, as one bounded name (idem.Answer):
//     executed, replayed, or an idem.Code; what a span and a log line say.
//   - key hash: a keyed hash of a scope (idem.KeyHash), the only trace of a
//     key an operator may opt into in logs and spans.
//   - ending: how a checked call ended (linearizability.Ending): ok,
//     conflict, failed, or indeterminate (its effect is unknown, as Jepsen
//     says). A report is what a linearizability check returns.
//   - baseline: how the simulator's servers use the store: the correct
//     executor, or an anti-pattern the checkers must catch (sim.Baseline).
//   - trace event: one line of a simulated run's trace (sim.TraceEvent).
//
// # Lifecycle
//
//	absent, expired, or settled past TTL
//	      |
//	      | Reserve -> Execute (fresh token)
//	      v
//	+-------------+  Fail (not executed)   +------------------+
//	| in_progress |----------------------->| failed_retryable |
//	+-------------+                        +------------------+
//	  |   |    ^         Reserve -> Execute (fresh token)  |  ^
//	  |   |    +-------------------------------------------+  |
//	  |   | MarkUnknown, or lease expired                     |
//	  |   | (Reserve or Sweep) -> Reconciling                 |
//	  |   v                                                   |
//	  | +---------+  Fail, Resolve(not executed)              |
//	  | | unknown |---------------------------------------------+
//	  | +---------+
//	  |   |   ^ Resolve(still unknown): backoff, attempts+1
//	  |   |   +--+
//	  |   | Complete, Resolve(executed)
//	  v   v
//	+-----------+  Reserve -> Replay; Sweep past TTL:
//	| completed |  soft -> expired, hard -> absent
//	+-----------+  (failed_retryable past TTL likewise)
//
// in_progress and unknown are never expired by a TTL. unknown is left only by
// its owner (Complete, Fail) or by the reconciler (Resolve). An operator's
// Evict makes a completed, failed_retryable or expired record absent.
//
// # The caller's contract
//
// A driver (or the executor over a driver) applies one event to one scope so:
//
//  1. Load the record of the scope, the store's current time, and a fresh
//     fencing token, in one read. An absent record is Record{Scope: s}.
//  2. Build the event with Now set to that time; for Reserve, Token set to
//     the fresh token; for owner events, the owner's token.
//  3. Call Step with the record, the event and a policy that passes Validate.
//     On an error nothing changed: report it, never write. Step refuses a
//     scope that is not one (Scope.Validate; a reserve under the policy's
//     KeyBytesMax, other events under KeyBytesMax) and an error code that
//     is not one, so a host needs no validation of its own; one that does
//     I/O still validates a request before sending it anywhere.
//  4. Perform Transition.Write atomically: insert only if the scope has no
//     record; update or delete only if the stored record still has
//     Write.ExpectVersion and Write.ExpectToken. Store the record as Step left it.
//  5. If the write's precondition failed, someone else changed the record:
//     go back to step 1. Never retry a write without stepping again.
//  6. Act on Transition.Decision only once the write succeeded (or was WriteNone):
//     run the action on Execute with Decision.Token, replay on Replay, and so on.
//  7. If the write's outcome is unknown (a timeout after sending it), treat
//     the decision as not taken: do not execute. Loading again will show
//     whether it applied.
package core
