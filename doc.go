// Package idem makes retried API requests safe: it runs a request's side
// effect at most once per idempotency key, replays the stored outcome byte
// for byte to every retry, refuses a key reused for another request, and
// never re-executes when it cannot know whether the first execution
// happened. This package is for applications; the lifecycle itself lives in
// package core, a pure state machine, and drivers implement package store.
//
// # Using it
//
//  1. At start-up, build one Store (store/mem, or store/pgx for PostgreSQL)
//     and one Executor over it with New, with the Policy you want (lease, TTL,
//     in-flight wait, 409 or 202, expiry and fail modes). Build the executor
//     once, never per request: two executors over two stores know nothing of
//     each other's keys.
//  2. Start its workers beside your servers: ex.Sweeper() (leases and TTLs)
//     and ex.Reconciler(check) (asks your downstream whether an unknown
//     attempt happened). Run them until shutdown; Run reports every failed
//     run to a handler and counts it.
//  3. For each request, build its Scope from the authenticated principal,
//     the use case and the Idempotency-Key header (16 to 255 bytes of
//     printable ASCII, no leading or trailing space), and its Fingerprint
//     from the semantic body fields (package fingerprint).
//  4. Call ex.Do with an Action. Return a Response for every business
//     outcome, 4xx and 5xx included: it is stored and replayed. Wrap an error
//     with NotExecuted only when you know nothing left the process; every
//     other error, a panic or a timeout leaves the key unknown until the
//     Reconciler settles it.
//  5. Answer with the Result's Response (executed now, or replayed), or map
//     the *Error: its Code is stable, its Status is the HTTP status, and
//     RetryAfter says when a client should come back. The Result is yours:
//     a replay's Response is a copy, so editing it changes no other replay.
//
// # A key past its TTL
//
// A completed (or failed_retryable) record binds its key for the policy's
// TTL after its outcome, at most 72 h. After that the key starts a new
// incarnation: a retry, even with the same payload, executes again, and one with
// another payload is no longer ErrKeyMisuse. With soft expiry (the
// default) the sweeper keeps a tombstone (scope, fingerprint, token and
// times; the response is dropped at expiry, so an expired key's outcome
// can no longer be replayed) until the policy's TombstoneRetention, then
// prunes it; with hard expiry the record is deleted at once. Either way the
// new incarnation gets a fencing token never used before for that scope, so
// no owner of the old one can write over it. Keys in progress or unknown
// never expire. Pick a TTL longer than any client retries.
//
// # Errors
//
// Every error Do returns is an *Error; match it with errors.Is against the
// Err* sentinels (ErrKeyMisuse: 422; ErrInProgress and ErrOutcomeUnknown:
// 409 with Retry-After; ErrStoreUnavailable: 503, nothing ran;
// ErrStoreRejected: 500, the store rejected a write for good, as a database
// rejects a value or a constraint, which retrying will not change).
//
// A store's rejection is never taken for an outage: a rejected reserve runs
// nothing; a refused outcome hands the key to the reconciler at once (its
// last error code store_rejected), and the Result says the outcome was not
// recorded; the reconciler reschedules, with backoff, a finding the store
// refuses. NotExecuted with an error code the core refuses (not 1 to 64
// bytes of RFC 9110 token characters) still frees the key, with the
// default code, and Do says the code was refused.
//
// # Leases
//
// An action runs on a context that is cancelled, with context.Cause
// ErrLeaseLost, as soon as a heartbeat finds its record taken over, and in
// any case a margin (a twentieth of the lease, at most a second) before the
// lease's end as Do last knew it: reckoned from when the call that granted
// or extended it was sent, so that neither a slow answer nor a store that
// hangs can stretch an attempt past the lease the sweeper and the
// reconciler go by. Nothing Do does after the action returns waits for a
// heartbeat under way.
//
// # Metrics
//
// Metrics receives the counters of SPEC §7 with bounded labels (use case,
// event, decision): never the key, principal or tenant.
//
// # Hosts that do their own I/O
//
// Executor.Begin returns a Flow: one request as a state machine without
// goroutines or clocks, whose effects its host performs. Next says what to
// do: apply an event (through store.ApplyHeld when the effect holds the
// attempt's record; detached from the caller's context when it is the
// attempt's outcome), run the action with the attempt's Lease kept beside
// it (when to beat, when to tell the action its lease is lost), or wait
// for another attempt; the host reports what happened (Applied, Ran,
// Waited, or Gone when its caller went away), and raises again a panic
// the final effect carries. The Flow is package flow's (I/O-free: the
// standard library, the core and the store's contract), named here too;
// Do is a host of its public calls and of nothing else (it cannot reach
// further), the simulator is another, on virtual time, and the wasm module
// carries the same package to other runtimes: what the simulator checks is
// the sequence a service runs.
package idem
