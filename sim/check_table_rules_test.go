package sim

import (
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// TestTableBoundariesAtTheirInstant: every deadline of the lifecycle table
// is "now >= the deadline" (invariant 10). For each status a reserve or a
// sweep judges by a time, the right decision exactly at the deadline and
// a nanosecond before it passes, and the other one is reported.
func TestTableBoundariesAtTheirInstant(t *testing.T) {
	w, reqs := ruleWorld(t, 1)
	p := w.policy
	at := epoch.Add(time.Hour)
	record := func(st core.Status) core.Record {
		rec := core.Record{Scope: reqs[0].key, Status: st, Fingerprint: reqs[0].fp, Token: 7, Version: 2, CreatedAt: epoch}
		if st == core.StatusInProgress {
			rec.LockedUntil = at
		} else {
			rec.ExpiresAt = at
		}
		return rec
	}
	other := core.Fingerprint{0x0f}
	for _, c := range []struct {
		what   string
		st     core.Status
		ev     core.Event
		now    time.Time
		d      core.DecisionKind
		report bool
	}{
		{"a completed record at its expiry, replayed", core.StatusCompleted, core.Event{Kind: core.EventReserve, Fingerprint: reqs[0].fp}, at, core.DecisionReplay, true},
		{"a completed record at its expiry, executed", core.StatusCompleted, core.Event{Kind: core.EventReserve, Fingerprint: reqs[0].fp}, at, core.DecisionExecute, false},
		{"a completed record before its expiry, executed", core.StatusCompleted, core.Event{Kind: core.EventReserve, Fingerprint: reqs[0].fp}, at.Add(-1), core.DecisionExecute, true},
		{"a completed record before its expiry, replayed", core.StatusCompleted, core.Event{Kind: core.EventReserve, Fingerprint: reqs[0].fp}, at.Add(-1), core.DecisionReplay, false},
		{"a failed_retryable record at its expiry, another payload refused", core.StatusFailedRetryable, core.Event{Kind: core.EventReserve, Fingerprint: other}, at, core.DecisionMismatch, true},
		{"a failed_retryable record at its expiry, another payload executed", core.StatusFailedRetryable, core.Event{Kind: core.EventReserve, Fingerprint: other}, at, core.DecisionExecute, false},
		{"a failed_retryable record before its expiry, another payload refused", core.StatusFailedRetryable, core.Event{Kind: core.EventReserve, Fingerprint: other}, at.Add(-1), core.DecisionMismatch, false},
		{"a lease at its end, in flight", core.StatusInProgress, core.Event{Kind: core.EventReserve, Fingerprint: reqs[0].fp}, at, core.DecisionInFlight, true},
		{"a lease at its end, reconciling", core.StatusInProgress, core.Event{Kind: core.EventReserve, Fingerprint: reqs[0].fp}, at, core.DecisionReconciling, false},
		{"a lease before its end, reconciling", core.StatusInProgress, core.Event{Kind: core.EventReserve, Fingerprint: reqs[0].fp}, at.Add(-1), core.DecisionReconciling, true},
		{"a lease before its end, in flight", core.StatusInProgress, core.Event{Kind: core.EventReserve, Fingerprint: reqs[0].fp}, at.Add(-1), core.DecisionInFlight, false},
		{"a lease swept at its end", core.StatusInProgress, core.Event{Kind: core.EventSweep}, at, core.DecisionLeaseExpired, false},
		{"a lease left alone at its end", core.StatusInProgress, core.Event{Kind: core.EventSweep}, at, core.DecisionNothingDue, true},
		{"a lease swept before its end", core.StatusInProgress, core.Event{Kind: core.EventSweep}, at.Add(-1), core.DecisionLeaseExpired, true},
		{"a failed_retryable record left alone at its expiry", core.StatusFailedRetryable, core.Event{Kind: core.EventSweep}, at, core.DecisionNothingDue, true},
		{"a completed record expired before its expiry", core.StatusCompleted, core.Event{Kind: core.EventSweep}, at.Add(-1), core.DecisionExpired, true},
		{"a tombstone pruned at its end", core.StatusExpired, core.Event{Kind: core.EventSweep}, at, core.DecisionPruned, false},
		{"a tombstone kept at its end", core.StatusExpired, core.Event{Kind: core.EventSweep}, at, core.DecisionNothingDue, true},
		{"a tombstone pruned before its end", core.StatusExpired, core.Event{Kind: core.EventSweep}, at.Add(-1), core.DecisionPruned, true},
	} {
		before := record(c.st)
		ev := c.ev
		ev.Now = c.now
		after := before // what the event left does not matter to these rules
		w.check.stepped(&before, &ev, &p, &after, c.d)
		want := -1
		if c.report {
			want = invTime
		}
		expect(t, w, want, c.what)
	}
}

// TestDueListsEveryDueRecord: a Due listing shorter than its limit leaves
// out no record due by the store's now (exactly due included), wherever it
// sits among records not yet due; one as long as its limit may have been
// cut short by it (invariant 10).
func TestDueListsEveryDueRecord(t *testing.T) {
	w, reqs := ruleWorld(t, 3)
	now := epoch.Add(time.Hour)
	settled := func(i int, expires time.Time) core.Record {
		return core.Record{Scope: reqs[i].key, Status: core.StatusCompleted, Token: core.Token(10 + i), Version: 2, ExpiresAt: expires}
	}
	w.shadow[0] = settled(0, now.Add(1)) // not due yet, a nanosecond short
	w.shadow[1] = settled(1, now)        // due exactly now, listed
	w.shadow[2] = settled(2, now)        // due exactly now
	listed := []core.Record{w.shadow[1]}
	w.check.listedDue(store.DueSweep, 2, now, true, listed)
	expect(t, w, invTime, "a listing one short of its limit that leaves out a due record")
	w.check.listedDue(store.DueSweep, 1, now, true, listed)
	expect(t, w, -1, "a listing at its limit")
	w.check.listedDue(store.DueSweep, 3, now, true, []core.Record{w.shadow[1], w.shadow[2]})
	expect(t, w, -1, "a listing of every due record")

	// The reconciler's: an unknown record due exactly now, after one not
	// yet due, and one given up (unscheduled) that is never due.
	unknown := func(i int, after time.Time) core.Record {
		return core.Record{Scope: reqs[i].key, Status: core.StatusUnknown, Token: core.Token(10 + i), Version: 3, ReconcileAfter: after}
	}
	w.shadow[0], w.shadow[1], w.shadow[2] = unknown(0, now.Add(1)), unknown(1, time.Time{}), unknown(2, now)
	w.check.listedDue(store.DueReconcile, 10, now, true, nil)
	expect(t, w, invTime, "a reconciler's listing that leaves out a record due exactly now")
	w.check.listedDue(store.DueReconcile, 10, now, true, []core.Record{w.shadow[2]})
	expect(t, w, -1, "a reconciler's listing of the one due record")
}

// TestDueListsOnlyDueRecordsInOrder: a Due listing holds only records due
// by the store's now (a nanosecond early is not due), most overdue first,
// and no more than its limit (invariant 10): the workers take what Due
// gives, so a listing that breaks these makes them act out of the policy.
func TestDueListsOnlyDueRecordsInOrder(t *testing.T) {
	w, reqs := ruleWorld(t, 3)
	now := epoch.Add(time.Hour)
	settled := func(i int, expires time.Time) core.Record {
		return core.Record{Scope: reqs[i].key, Status: core.StatusCompleted, Token: core.Token(10 + i), Version: 2, ExpiresAt: expires}
	}
	early, exact, overdue := settled(0, now.Add(1)), settled(1, now), settled(2, now.Add(-time.Second))
	w.shadow[0], w.shadow[1], w.shadow[2] = early, exact, overdue
	for _, c := range []struct {
		what  string
		limit int
		recs  []core.Record
		exact bool
		bad   bool
	}{
		{"a record a nanosecond short of due", 3, []core.Record{overdue, exact, early}, true, true},
		{"the same, on a live run's later reading", 3, []core.Record{overdue, exact, early}, false, true},
		{"most overdue last", 3, []core.Record{exact, overdue}, true, true},
		{"more records than the limit", 1, []core.Record{overdue, exact}, true, true},
		{"an unknown record listed for a sweep", 3, []core.Record{{Scope: reqs[0].key, Status: core.StatusUnknown, Token: 9, Version: 3, ReconcileAfter: now}}, true, true},
		{"the due records, most overdue first", 3, []core.Record{overdue, exact}, true, false},
		{"the first at the limit", 1, []core.Record{overdue}, true, false},
	} {
		w.check.listedDue(store.DueSweep, c.limit, now, c.exact, c.recs)
		want := -1
		if c.bad {
			want = invTime
		}
		expect(t, w, want, c.what)
	}
}
