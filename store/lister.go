package store

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/idemkit/idem/core"
)

// Lister is the optional interface of a store an operator can read whole:
// its records by status, oldest first, a page at a time, and its counts.
// cmd/idemctl reads a store through it; nothing on a request's path does.
// It only reads: settling a record is the core's, through its events.
type Lister interface {
	// List returns the records q selects, oldest first: by CreatedAt, then
	// tenant, principal, use case and key. Records are copies.
	List(ctx context.Context, q ListQuery) ([]core.Record, error)
	// Stats counts the records per status and reads each worker queue's
	// backlog, at the store's clock.
	Stats(ctx context.Context) (Stats, error)
}

// ListLimitMax is the most records one List returns.
const ListLimitMax = 1000

// ListQuery selects a page of records.
type ListQuery struct {
	// Status is the status listed; StatusAbsent lists every status.
	Status core.Status
	// Abandoned lists only unknown records the reconciler gave up on (no
	// ReconcileAfter: they wait for an operator). Status must then be
	// StatusUnknown or StatusAbsent.
	Abandoned bool
	// After is where the previous page ended (CursorOf its last record);
	// nil for the first page.
	After *ListCursor
	// Limit is the most records returned, 1 to ListLimitMax.
	Limit int
}

// ListCursor is a place in List's order.
type ListCursor struct {
	CreatedAt time.Time
	Scope     core.Scope
}

// CursorOf is the cursor of the page that ends with r.
func CursorOf(r *core.Record) *ListCursor {
	return &ListCursor{CreatedAt: r.CreatedAt, Scope: r.Scope}
}

// Before reports whether r comes before c in List's order (or is c's
// record): a page after c holds only records for which it is false.
func (c *ListCursor) Before(r *core.Record) bool {
	if !r.CreatedAt.Equal(c.CreatedAt) {
		return r.CreatedAt.Before(c.CreatedAt)
	}
	return ScopeCompare(r.Scope, c.Scope) <= 0
}

// ScopeCompare orders scopes by tenant, principal, use case, then key, byte
// by byte (as PostgreSQL's C collation and Go's strings compare).
func ScopeCompare(a, b core.Scope) int {
	for _, p := range [...][2]string{{a.Tenant, b.Tenant}, {a.Principal, b.Principal}, {a.UseCase, b.UseCase}, {a.Key, b.Key}} {
		switch {
		case p[0] < p[1]:
			return -1
		case p[0] > p[1]:
			return 1
		}
	}
	return 0
}

// Matches reports whether r is of the records q selects (its cursor
// aside).
func (q *ListQuery) Matches(r *core.Record) bool {
	if q.Status != core.StatusAbsent && r.Status != q.Status {
		return false
	}
	return !q.Abandoned || (r.Status == core.StatusUnknown && r.ReconcileAfter.IsZero())
}

// Page is what a store that cannot query in List's order returns for q
// from all its records: those q selects after its cursor, sorted, at most
// q.Limit. It may reorder all.
func (q *ListQuery) Page(all []core.Record) []core.Record {
	page := all[:0]
	for i := range all {
		if q.Matches(&all[i]) && (q.After == nil || !q.After.Before(&all[i])) {
			page = append(page, all[i])
		}
	}
	slices.SortFunc(page, func(a, b core.Record) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return ScopeCompare(a.Scope, b.Scope)
	})
	return page[:min(len(page), q.Limit)]
}

// Validate refuses a query no store can answer.
func (q *ListQuery) Validate() error {
	// No fmt: this package is linked into the wasm module, which must
	// stay small (wasm/module_test.go).
	switch {
	case q.Limit < 1 || q.Limit > ListLimitMax:
		return errors.New("idem/store: list: limit " + strconv.Itoa(q.Limit) + " is not within 1 to " + strconv.Itoa(ListLimitMax))
	case q.Status != core.StatusAbsent && !q.Status.Valid():
		return errors.New("idem/store: list: status " + strconv.Itoa(int(q.Status)) + " is not a record's status")
	case q.Abandoned && q.Status != core.StatusAbsent && q.Status != core.StatusUnknown:
		return errors.New("idem/store: list: only unknown records are abandoned")
	}
	return nil
}

// Stats is what an operator reads first: how many records there are of
// each status, and whether the workers keep up.
type Stats struct {
	Now      time.Time             // the store's clock when it counted
	ByStatus map[core.Status]int64 // records per status (absent: none)
	// Abandoned is how many unknown records wait for an operator.
	Abandoned int64
	Sweep     QueueStats // records due for the sweeper (DueSweep)
	Reconcile QueueStats // records due for the reconciler (DueReconcile)
}

// QueueStats is one worker queue's backlog.
type QueueStats struct {
	Due int64 // records due now
	// OldestDue is when the most overdue of them came due (zero: none):
	// now less it is how far behind the worker is.
	OldestDue time.Time
}
