package store

import (
	"context"
	"errors"
	"time"

	"github.com/idemkit/idem/core"
)

// Snapshot is one read of a scope: its record, the store's clock, and a
// fencing token nobody has been given for this scope before.
type Snapshot struct {
	// Record is the stored record, or core.Record{Scope: s} (status absent).
	Record core.Record
	// Now is the store's time at the read. All lifecycle times come from
	// the store, so that servers with skewed clocks agree on leases and
	// TTLs (a database driver returns the database's clock).
	Now time.Time
	// FreshToken is greater than every token the store has handed out for
	// this scope, including to records since deleted, and is handed out
	// with no other scope's read, so that a precondition meant for one
	// scope never matches another's record (a store-wide sequence gives
	// both). Reserve uses it if it creates an attempt; otherwise it is
	// simply never used.
	FreshToken core.Token
}

// DueKind says which records Due lists.
type DueKind uint8

const (
	// DueSweep: in_progress records whose lease ended (LockedUntil <= now),
	// and completed, failed_retryable or expired records (tombstones) past
	// ExpiresAt.
	DueSweep DueKind = iota + 1
	// DueReconcile: unknown records with a non-zero ReconcileAfter <= now.
	DueReconcile
)

func (k DueKind) String() string {
	switch k {
	case DueSweep:
		return "sweep"
	case DueReconcile:
		return "reconcile"
	}
	return "due(?)"
}

// ErrConflict is what a Store returns when a write's precondition does not
// hold: the scope has a record (Insert), or no longer has the expected
// version and token (CompareAndSet, Delete). The caller loads and steps again.
var ErrConflict = errors.New("idem/store: precondition failed")

// ErrRejected is what a Store returns (wrapped, with the reason) when it
// rejects a call deterministically: the database rejected the data or one
// of its constraints (in PostgreSQL a data exception or an integrity
// violation other than the insert's unique key). Nothing was written, and
// the same call would be rejected again: it is neither an outage nor an
// ambiguous commit. The executor answers it with idem.ErrStoreRejected (not
// ErrStoreUnavailable), counts it in store.rejected, and the reconciler
// reschedules a record whose finding is rejected instead of retrying it in
// every batch. A driver should reject nothing the core accepts (the
// conformance suite stores every value the core allows); ErrRejected is for
// what a deployment added (a constraint, a column type) or a driver bug.
var ErrRejected = errors.New("idem/store: rejected by the store")

// ErrStoreFull is what a bounded store returns when it rejects a new record
// rather than evict a live one.
var ErrStoreFull = errors.New("idem/store: full")

// Store is what a driver provides so that the core can run over it. A driver
// keeps no lifecycle logic: it loads, and it writes what core.Step decided,
// under a precondition. Every method must be safe for concurrent use, and
// each must be atomic and linearizable on its own: it takes effect entirely
// at one instant between its call and its return, or not at all.
//
// Errors: ErrConflict (possibly wrapped) means the precondition did not hold
// and nothing was written. Any other error means the store could not answer;
// for a write it may or may not have been applied (an ambiguous commit), and
// callers treat it so: they never act on the decision, and load again.
//
// Records handed to and returned by a Store are values: a driver must not
// keep references into a caller's record (copy the Response's slices), and a
// caller must not modify the slices of a record it got from the store.
type Store interface {
	// Load reads the record of scope with the store's time and a fresh
	// token (see Snapshot). A missing record is not an error.
	Load(ctx context.Context, scope core.Scope) (Snapshot, error)
	// Insert stores rec if its scope has no record, else returns ErrConflict.
	Insert(ctx context.Context, rec *core.Record) error
	// CompareAndSet replaces the record of rec.Scope by rec if the stored one
	// has exactly expectVersion and expectToken, else returns ErrConflict
	// (also when there is no record). Version and token together: versions
	// restart when a pruned key is reused, tokens never repeat.
	CompareAndSet(ctx context.Context, rec *core.Record, expectVersion uint64, expectToken core.Token) error
	// Delete removes the record of scope if it has exactly expectVersion and
	// expectToken, else returns ErrConflict (also when there is none). The
	// scope's token history survives: later FreshTokens stay greater.
	Delete(ctx context.Context, scope core.Scope, expectVersion uint64, expectToken core.Token) error
	// Due lists at most limit records due for kind at the store's time, most
	// overdue first. The list is a hint: the caller loads and steps each
	// record again, so a record that changed since is handled correctly.
	Due(ctx context.Context, kind DueKind, limit int) ([]core.Record, error)
	// Wait blocks until the record of scope no longer has version and token
	// (it was written or deleted), or ctx is done (then it returns ctx.Err()).
	// It may return early, spuriously; callers load again either way. A store
	// without change notification may poll (see PollWait).
	Wait(ctx context.Context, scope core.Scope, version uint64, token core.Token) error
}

// Applier is an optional fast path for a Store that can load, step and write
// under one lock, so that no compare-and-set can be lost to a race. Apply
// must behave exactly as the package's Apply loop: take Now and, for
// Reserve, Token from the store, call core.Step, and write its result. It
// fills *out, which the caller owns (a host keeps one Applied for many
// events: 400 bytes it need not copy back and forth), and must not keep out;
// on an error the caller disregards *out. An error the core returned is
// returned as is; any other error is the store's.
type Applier interface {
	Apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *Applied) error
}

// Applied is what applying one event to one scope did.
type Applied struct {
	Before     core.Status     // the record's status before the event
	Record     core.Record     // the record after the event (what the store now holds)
	Transition core.Transition // the core's decision and the write that was made
	Now        time.Time       // the store's time the event was applied at
}

// PollWait is a Wait for stores that cannot notify: it loads every interval
// until the record changed or ctx is done.
func PollWait(ctx context.Context, s Store, scope core.Scope, version uint64, token core.Token, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		snap, err := s.Load(ctx, scope)
		if err != nil {
			return err
		}
		if snap.Record.Version != version || snap.Record.Token != token {
			return nil
		}
	}
}
