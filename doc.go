// Package idem makes retried API requests safe: it runs a request's side
// effect at most once per idempotency key, replays the stored outcome byte
// for byte to every retry, refuses a key reused for another request, and
// never re-executes when it cannot know whether the first execution
// happened. The lifecycle itself lives in package core, a pure state
// machine; this package runs it over a Store.
//
// # Pieces
//
//   - Executor.Do runs a caller's Action under the core's decisions: execute,
//     replay, wait for a running attempt, or refuse. It fails closed when the
//     store fails.
//   - Call is the same request as a state machine without goroutines or
//     clocks (Executor.Begin); Do is a thin loop over it. Op is the same for
//     one event applied to one record (load, step, compare-and-set).
//   - Store is the driver contract (store/mem, store/pgx). Applier is its
//     optional single-lock fast path.
//   - Reconciler settles records whose outcome is unknown by asking the
//     downstream system; Sweeper enforces leases and TTLs.
//   - Metrics receives the counters of SPEC §7; Error carries a stable Code,
//     an HTTP status and a Retry-After for every refusal.
//
// # Using it
//
//  1. Build a Store and an Executor with the Policy you want (leases, TTL,
//     in-flight wait, 409 or 202, expiry and fail modes).
//  2. For each request, build its Scope from the authenticated principal,
//     the use case and the Idempotency-Key header, and its Fingerprint from
//     the semantic body fields (package fingerprint).
//  3. Call Do with an Action. Return a Response for every business outcome,
//     4xx included. Wrap an error with NotExecuted only when you know
//     nothing left the process; every other error, a panic or a timeout
//     leaves the key unknown until the Reconciler settles it.
//  4. Map errors with errors.Is against the Err* sentinels, or use
//     (*Error).Status and RetryAfter directly.
//  5. Run a Sweeper and a Reconciler beside your servers.
package idem
