// Package store is the driver contract of idem: what a store of idempotency
// records implements, and the one loop that applies a lifecycle event over
// it. It is for driver authors (store/mem, store/pgx) and for hosts that do
// their own I/O; applications use the root package idem, which runs this
// loop for them.
//
// # The contract in one screen
//
//   - Store is what every driver implements: Load (a record, the store's
//     clock and a fresh fencing token, in one read), Insert, CompareAndSet and
//     Delete under a (version, token) precondition, Due (records whose lease
//     or TTL ran out, or whose reconciliation is due) and Wait (block until a
//     record changes).
//   - Applier is the optional fast path of a store that can load, step and
//     write under one lock. Apply uses it when the store has it.
//   - Lister is the optional interface of a store an operator can read
//     whole (cmd/idemctl): records by status, oldest first, paged, and
//     counts. Nothing on a request's path uses it.
//   - Auditor is the optional interface of a store that keeps the audit
//     trail of records an operator settled by hand (who, why, when),
//     written exactly when the core's event wrote.
//   - Apply is the load-step-write loop of core's caller contract: load, call
//     core.Step, write under its precondition, and on a lost race load again.
//     Op is the same loop one store call at a time, for hosts that decide when
//     each call happens (the simulator, on virtual time).
//   - Wrap builds a Store over another (a recorder, a fault injector, a view)
//     and decides in one place whether the inner store's fast path shows
//     through.
//   - Neither Apply nor Op counts anything: they return what happened (an
//     Applied, or an error), and the caller counts.
//
// # Errors
//
// A driver returns ErrConflict (possibly wrapped) when a precondition did not
// hold and nothing was written, ErrStoreFull when it rejects a new record
// rather than evict a live one, ErrRejected (wrapped) when it rejects the call
// deterministically (bad data for the database, a constraint), and any other
// error when it could not answer; a failed write may then have applied (an
// ambiguous commit). Apply
// and Op wrap every store failure in *Error, which names the Method that
// failed; any other error they return is the core refusing the event
// (errors.Is against the core's sentinels).
package store
