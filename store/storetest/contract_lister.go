package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	"github.com/idemkit/idem/store"
)

// runLister checks store.Lister, for a store that has it: pages in
// (CreatedAt, scope) order that cover every record once, the status and
// abandoned filters, bad queries refused, and counts and backlogs that
// match the records.
func runLister(t *testing.T, newStore func(*testing.T) store.Store, cfg *config) {
	c := &contract{cfg: cfg, newStore: newStore, d: linearizability.ModelOptions{TimeResolution: cfg.resolution}}
	s := newStore(t)
	l, ok := s.(store.Lister)
	if !ok {
		t.Logf("%T is no store.Lister: nothing to check", s)
		return
	}
	recs := c.listerRecords(t, s)
	ctx := context.Background()
	var paged []core.Record
	q := store.ListQuery{Limit: 3}
	for page := 0; ; page++ {
		got, err := l.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > q.Limit || page > len(recs) {
			t.Fatalf("page %d: %d records for limit %d", page, len(got), q.Limit)
		}
		paged = append(paged, got...)
		if len(got) < q.Limit {
			break
		}
		q.After = store.CursorOf(&got[len(got)-1])
	}
	c.sameList(t, "every record, 3 a page", paged, recs)
	for _, f := range []struct {
		name string
		q    store.ListQuery
		want []int // indexes into recs
	}{
		{"completed", store.ListQuery{Status: core.StatusCompleted, Limit: 10}, []int{0, 6}},
		{"unknown", store.ListQuery{Status: core.StatusUnknown, Limit: 10}, []int{3, 4}},
		{"abandoned", store.ListQuery{Abandoned: true, Limit: 10}, []int{4}},
		{"the oldest in progress", store.ListQuery{Status: core.StatusInProgress, Limit: 1}, []int{1}},
	} {
		got, err := l.List(ctx, f.q)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]core.Record, len(f.want))
		for i, k := range f.want {
			want[i] = recs[k]
		}
		c.sameList(t, f.name, got, want)
	}
	for _, bad := range []store.ListQuery{{Limit: 0}, {Limit: store.ListLimitMax + 1}, {Status: core.StatusCompleted, Abandoned: true, Limit: 1}, {Status: 77, Limit: 1}} {
		if _, err := l.List(ctx, bad); err == nil {
			t.Errorf("list %+v: no error", bad)
		}
	}
	checkStats(t, l, recs)
}

// listerRecords inserts seven records of every kind an operator looks
// for, in List's order, timed around the store's clock.
func (c *contract) listerRecords(t *testing.T, s store.Store) []core.Record {
	t.Helper()
	ctx := context.Background()
	now := load(t, s, c.scope(t, 0)).Now.Truncate(time.Millisecond)
	var recs []core.Record
	add := func(i int, status core.Status, created time.Time, edit func(*core.Record)) {
		snap := load(t, s, c.scope(t, i))
		r := sample(snap.Record.Scope, created, snap.FreshToken, 1)
		r.Status = status
		if status != core.StatusCompleted {
			r.Response, r.CompletedAt = core.Response{}, time.Time{}
		}
		edit(&r)
		if err := s.Insert(ctx, &r); err != nil {
			t.Fatalf("insert %s: %v", r.Scope, err)
		}
		recs = append(recs, r)
	}
	h := time.Hour
	add(0, core.StatusCompleted, now.Add(-6*h), func(r *core.Record) { r.ExpiresAt = now.Add(-time.Minute) })        // due: past its TTL
	add(1, core.StatusInProgress, now.Add(-5*h), func(r *core.Record) { r.LockedUntil = now.Add(-2 * time.Minute) }) // due: lease over
	add(2, core.StatusInProgress, now.Add(-4*h), func(r *core.Record) { r.LockedUntil = now.Add(h) })                // not due
	add(3, core.StatusUnknown, now.Add(-3*h), func(r *core.Record) { r.ReconcileAfter = now.Add(-3 * time.Minute) }) // due for the reconciler
	add(4, core.StatusUnknown, now.Add(-2*h), func(r *core.Record) { r.ReconcileAfter = time.Time{} })               // abandoned
	add(5, core.StatusFailedRetryable, now.Add(-h), func(r *core.Record) { r.ExpiresAt = now.Add(h) })               // not due
	add(6, core.StatusCompleted, now.Add(-h), func(r *core.Record) { r.ExpiresAt = now.Add(h) })                     // the same instant: by scope
	if store.ScopeCompare(recs[5].Scope, recs[6].Scope) > 0 {
		recs[5], recs[6] = recs[6], recs[5]
	}
	return recs
}

// sameList fails unless got is want, record by record, in that order.
func (c *contract) sameList(t *testing.T, what string, got, want []core.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !c.d.SameRecord(&got[i], &want[i]) {
			t.Fatalf("%s: record %d is\n %s\nwant\n %s", what, i, got[i].Describe(), want[i].Describe())
		}
	}
}

// checkStats fails unless l's counts and backlogs are recs'.
func checkStats(t *testing.T, l store.Lister, recs []core.Record) {
	t.Helper()
	st, err := l.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[core.Status]int64{}
	for i := range recs {
		want[recs[i].Status]++
	}
	for status, n := range want {
		if st.ByStatus[status] != n {
			t.Errorf("%v: %d records counted, want %d (%v)", status, st.ByStatus[status], n, st.ByStatus)
		}
	}
	sweepOldest := recs[1].LockedUntil // before recs[0]'s expiry
	if st.Abandoned != 1 || st.Sweep.Due != 2 || !st.Sweep.OldestDue.Equal(sweepOldest) ||
		st.Reconcile.Due != 1 || !st.Reconcile.OldestDue.Equal(recs[3].ReconcileAfter) || st.Now.IsZero() {
		t.Errorf("stats %+v: want 1 abandoned, 2 due for the sweep since %v, 1 for the reconciler since %v", st, sweepOldest, recs[3].ReconcileAfter)
	}
}
