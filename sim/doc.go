// Package sim is the deterministic fault simulator of idem: many clients,
// servers running the real executor over the real core and memory store, a
// payment gateway with a ledger of real charges, a reconciler and a sweeper,
// all on one virtual clock in one goroutine. Faults (SPEC §8) are injected by
// wrappers around the real components; the checkers, separate from the
// injectors, hold every run to the invariants of SPEC §6. One seed drives
// every random choice, so a failing run is reproduced by its seed.
//
// # The world
//
//   - Clients send payment requests, each with a fresh random key, to a
//     random server; they time out, retry with exponential backoff and full
//     jitter, honour Retry-After, and sometimes send one request to two
//     servers at once. A quarter of them are buggy and now and then reuse a
//     key for another payload, most often one whose record is
//     failed_retryable at the time.
//   - Servers host each request's idem.Flow as Executor.Do does, performing
//     each effect on virtual time: every store call goes through a store.Op
//     (load, step, compare-and-set) or the memory store's fast path, takes
//     effect when it is made, and its answer arrives after the store's
//     latency; the attempt's outcome is applied detached from the client,
//     whose hanging up (FaultDisconnect, at any step) ends every other
//     effect (Flow.Gone); the action is a charge at the gateway with the
//     attempt's lease end as its deadline, with the attempt's idem.Lease
//     kept beside it (beats bounded by their timeout, the action told at
//     the lease's TellBy). An action may panic after its charge
//     (FaultActionPanic: the Flow records it, then raises it again), or
//     ignore its context once told (FaultActionDeaf: a late owner). A crash
//     drops everything a server had in flight; a pause freezes it, never
//     the last server running (server.mayPause), and it holds at most
//     Config.BacklogMax arrivals meanwhile, refusing the rest (server.hold).
//   - The gateway charges, declines, times out before or after charging, or
//     is slow; it refuses a request that arrives after its deadline, which
//     is what lets the reconciler conclude "not executed" once an unknown
//     record's lease end has passed. Its ledger is the ground truth.
//   - The real idem.Reconciler (reading the ledger) and idem.Sweeper run
//     every few hundred milliseconds. The seed draws a second reconciler
//     beside the first, whose Checks are often slow (its findings arrive
//     after the key moved on), and a ledger that shows what an attempt did
//     only some time after its lease end (records stay unknown past their
//     TTL while clients retry).
//   - An operator (operator.go, FaultOperatorEvict) looks at a recent
//     request's record, often one in progress, unknown or failed_retryable,
//     and evicts it a while later by the token read then, as idemctl show
//     and evict do: the core must refuse an evict of a record whose outcome
//     is not known, or whose token is no longer the one read; an evicted
//     key's next request starts a new incarnation.
//   - A foreign host (foreign.go), a host of the core in another runtime
//     with none of the executor's validation, sends what the executor
//     refused (bad keys, error codes out of the alphabet or one byte too
//     long) straight to the store, whose Step must reject them.
//   - The store is the real memstore behind faultyStore, which makes calls
//     fail before they apply or after a write applied (an ambiguous commit),
//     on FaultStoreTokenStale has a Load hand out the record's own token
//     as fresh, a driver bug the core must refuse (ErrTokenNotFresh), and on
//     FaultStoreReject rejects for good (store.ErrRejected) every write of a
//     response over 32 KiB, and the records of keys that end in 'f', until
//     the faults stop: the executor must answer a refused reserve as a
//     refusal and hand a refused outcome's key to the reconciler, which
//     reschedules the finding it cannot write. The reconciler's Check may also panic (FaultCheckBad); the
//     reconciler must recover it and reschedule the record.
//   - Payloads are JSON documents that clients write out anew for every
//     send (members shuffled, white space, escapes, a client timestamp the
//     fingerprint excludes), under two use cases and schema versions; the
//     servers fingerprint the bytes with package fingerprint (payload.go).
//   - The store's clock has a grain drawn per seed (none, 1 ms or 1 s), so
//     that calls land on lease ends and expiry times exactly, and steps
//     back, by more than a heartbeat interval on some seeds (clock.go); a
//     share of payments are long actions that beat several times.
//   - Servers hand Complete the gateway's answer in a buffer they reuse once
//     they replied, and edit a replay's Result in place once they sent it
//     (a Result is the caller's); in-flight waits end on the memory store's
//     own change notification, the channel its Wait selects on (wait.go); a server may freeze between an owner's load and its write,
//     past its record's whole life; FaultBadInput sends keys with a space at
//     an end and starts servers with a policy out of range.
//   - On FaultCompleteInDiffers an action completes in its own transaction
//     (as Attempt.CompleteIn) and then returns that response, on half the
//     draws with a header value its handler changed after the commit: the
//     executor's Complete must be refused (Conflict), Result.Recorded be
//     false, and replays give the stored response; that one answer is the
//     only one the replay-fidelity check does not compare.
//
// A run has a fault phase (Config.Arrival, while requests arrive) and then
// heals: no fault fires any more, and everything must converge.
//
// # The checkers
//
// checker only observes: the store's writes, the gateway's ledger, every
// answer a client saw, and the end state. Invariants: 1, a second real charge
// for a scope; 2, an outcome that differs from the first one a client saw or
// from the stored one; 3, a client receiving another payload's outcome, or a
// payload charged under another fingerprint; 4, an owner's write over a
// record of another attempt; 5, a record still in_progress or unknown at the
// end; 6, a request without a definitive answer within the bound after
// healing; 7, a gateway call without a reservation the store acknowledged;
// 8, a store write that breaks the lifecycle table of SPEC §5 or the seed's
// drawn policy (each write of an incarnation bumps the version by one;
// after Fail, evict leaves no record and keep a failed_retryable one; a
// TTL sweep leaves a tombstone without a response for the retention, or
// nothing; a heartbeat extends the lease to now + lease; a Resolve changes
// only a record unknown with its attempt's token, as the Check found, and
// "still unknown" counts one attempt, backs off base * 2^n capped, and
// gives the record up at exactly the policy's maximum; a new attempt never
// replaces an in_progress or unknown record), an owner event the table
// says changes the record that left it unchanged, a decision of the fast
// path's Apply other than the table's, or a Result.Recorded
// that claims a completion the store does not hold; and 0 for the store
// itself, a read that differs from the last write. Invariant 8 holds each
// write, field by field, to the record the reference model of the
// lifecycle leaves (internal/refmodel, check_store.go), and each fast-path
// answer to its decision; never to package core's: a bug planted in the
// core would otherwise be planted in its checker. The model is the one
// other reading of SPEC §5 in idem, the same that core's property test
// holds the core to. On the load-then-write path the checker knows the
// event only by its caller (check_event.go), so what the table copies
// into the record as it is (a fingerprint, a response, an error code) is
// checked on the fast path alone.
// 9, bad input taken (a key with a space at an end, a policy out of range,
// a stored header value with CR or LF); 10, a deadline judged on the wrong
// side of its instant (expires_at, locked_until, a due time) in any step
// the core takes, by the checker's own "now >= deadline" (check_table.go:
// no decision or record of the table, only the side of each instant), or
// a Due that leaves out a due record. Invariant 3 also covers the fingerprint:
// two different requests (by the checker's own pre-image) never share one,
// and invariant 6 a Mismatch on a key that only ever carried one payload,
// and a write that does not end a wait on its record.
// 11, Do's own contract: on virtual time, what each Flow asks of its host
// and when (check_flow.go: in_progress only once the in-flight wait ran
// out, and no wait past it; the outcome by how the action ended, with its
// token and code, detached from the client; a refused outcome's key handed
// to the reconciler; a refused reserve answered as a refusal; a panic
// raised again once recorded; the Lease's TellBy the documented margin
// before the lease's end reckoned from the send, and the action told then)
// and the workers' (check_workers.go: Sweeper.RunOnce's count, a refused
// finding rescheduled in its run); in RunLive, Do itself (a lost lease told
// at once and cancelling the action, no cancel while the extended lease
// runs, the outcome written detached from the caller, no empty success, the
// in-flight status by the policy); 12, a counter of SPEC §7 that differs
// from the checker's recount of what each caller was told. Invariant 4
// also holds every owner event the core accepts to the record's token,
// whatever the lease's state, and an operator's evict to the token they
// read, and invariant 10 every Due listing to due
// records only, most overdue first, at most its limit.
// With Config.LinCheck, the store's history is also checked for
// linearizability. The first violation stops the run; its report carries the
// scope's events and Config.Command reproduces it.
//
// # Baselines
//
// The baselines other than BaselineCorrect reproduce the anti-patterns of the
// seed documents, here and never in the core: naive (execute, then remember
// the key), no-fingerprint, evict-unknown (a timeout taken for "not
// executed"), lease-reexecute (run again on lease expiry, through a view of
// the store that shows an expired lease as failed_retryable) and no-fencing
// (write outcomes with whatever token owns the record). Each is caught within
// 200 seeds of the default settings.
//
// # Speed and determinism
//
// Events are (time, sequence) ordered in two pointer-free heaps (near and
// far), and in one arrival-ordered lane per fixed delay (a timeout, a tick:
// they come due in the order they were scheduled, at no cost per event);
// the hot paths schedule a handler and a kind instead of a closure. Bulk runs
// (RunSeeds) keep no trace: a seed that breaks an invariant is run again
// with tracing, which gives the same run. Nothing depends on map order,
// wall time or goroutine scheduling: the same Config gives the same Report.
package sim
