package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// dueAcrossKinds: Due(sweep) lists what is due for a sweep whatever the
// reason, ended leases, ended TTLs and tombstones past their retention, in
// one order, most overdue first, and only that: not a running lease, a TTL
// not yet over, a tombstone still kept, nor an unknown record (which
// Due(reconcile) lists). The records are inserted with their times in the
// past, on the store's own clock, so that no clock needs to move.
func (c *contract) dueAcrossKinds(t *testing.T) {
	s := c.newStore(t)
	ctx := context.Background()
	now := load(t, s, c.scope(t, 0)).Now
	ago := func(m int) time.Time { return now.Add(-time.Duration(m) * time.Minute) }
	recs := []core.Record{
		{Status: core.StatusInProgress, LockedUntil: ago(50)},                     // 0: the lease ended 50 minutes ago
		{Status: core.StatusCompleted, ExpiresAt: ago(40)},                        // 1: the TTL ended 40 minutes ago
		{Status: core.StatusExpired, ExpiresAt: ago(30)},                          // 2: the tombstone's retention ended
		{Status: core.StatusInProgress, LockedUntil: ago(20)},                     // 3
		{Status: core.StatusFailedRetryable, ExpiresAt: ago(10)},                  // 4
		{Status: core.StatusInProgress, LockedUntil: ago(-60)},                    // not due: the lease runs
		{Status: core.StatusCompleted, ExpiresAt: ago(-60)},                       // not due: the TTL runs
		{Status: core.StatusExpired, ExpiresAt: ago(-60)},                         // not due: the tombstone is kept
		{Status: core.StatusUnknown, ReconcileAfter: ago(60), ExpiresAt: ago(60)}, // for the reconciler only
	}
	scopes := make([]core.Scope, len(recs))
	for i := range recs {
		scopes[i] = c.scope(t, i+1)
		r := &recs[i]
		r.Scope, r.Fingerprint, r.Token, r.Version, r.CreatedAt = scopes[i], fpA, load(t, s, scopes[i]).FreshToken, 1, ago(90)
		if r.Status == core.StatusCompleted {
			r.Response, r.CompletedAt = responses[0], ago(80)
		}
		wantOK(t, "insert", s.Insert(ctx, r))
	}
	listed := func(kind store.DueKind, limit int) []int {
		t.Helper()
		due, err := s.Due(ctx, kind, limit)
		if err != nil {
			t.Fatalf("Due(%v, %d): %v", kind, limit, err)
		}
		var idx []int
		for _, r := range due {
			idx = append(idx, slices.Index(scopes, r.Scope))
		}
		return idx
	}
	if got := listed(store.DueSweep, 2); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("Due(sweep, 2) lists records %v, want [0 1]: the two most overdue, a lease and a TTL", got)
	}
	if got := listed(store.DueSweep, 10); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("Due(sweep, 10) lists records %v, want [0 1 2 3 4]: every kind, most overdue first, nothing else", got)
	}
	if got := listed(store.DueReconcile, 10); !slices.Equal(got, []int{8}) {
		t.Fatalf("Due(reconcile, 10) lists records %v, want [8]", got)
	}
}
