package memstore

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	"pgregory.net/rapid"
)

// TestDueIndexIsAFullScan: after any sequence of writes and deletes, Due
// lists exactly what a scan of every record would, in the same order, and
// the index stays within its bound of entries per record.
func TestDueIndexIsAFullScan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := time.Unix(1_700_000_000, 0)
		s := New(Options{Clock: func() time.Time { return now }, Shards: rapid.SampledFrom([]int{1, 4}).Draw(t, "shards"), Deterministic: true})
		ctx := context.Background()
		scopes := make([]core.Scope, rapid.IntRange(1, 40).Draw(t, "scopes"))
		for i := range scopes {
			scopes[i] = core.Scope{Principal: "p", UseCase: "u", Key: "0123456789abcdef-" + string(rune('a'+i%26)) + string(rune('a'+i/26))}
		}
		statuses := []core.Status{core.StatusInProgress, core.StatusCompleted, core.StatusFailedRetryable, core.StatusUnknown, core.StatusExpired}
		for range rapid.IntRange(0, 300).Draw(t, "ops") {
			sc := scopes[rapid.IntRange(0, len(scopes)-1).Draw(t, "scope")]
			snap, _ := s.Load(ctx, sc)
			at := func(name string) time.Time {
				return now.Add(time.Duration(rapid.IntRange(-100, 100).Draw(t, name)) * time.Second)
			}
			rec := core.Record{Scope: sc, Status: rapid.SampledFrom(statuses).Draw(t, "status"), Fingerprint: core.Fingerprint{1},
				Token: snap.FreshToken, LockedUntil: at("locked"), ExpiresAt: at("expires"), CreatedAt: now}
			if rapid.Bool().Draw(t, "scheduled") {
				rec.ReconcileAfter = at("reconcile")
			}
			switch {
			case !snap.Record.Exists():
				rec.Version = 1
				_ = s.Insert(ctx, &rec)
			case rapid.IntRange(0, 5).Draw(t, "delete") == 0:
				_ = s.Delete(ctx, sc, snap.Record.Version, snap.Record.Token)
			default:
				if rapid.Bool().Draw(t, "same_attempt") { // a heartbeat, say: same token, maybe the same times
					rec.Token = snap.Record.Token
					if rapid.Bool().Draw(t, "same_times") {
						rec.Status, rec.LockedUntil, rec.ExpiresAt, rec.ReconcileAfter = snap.Record.Status, snap.Record.LockedUntil, snap.Record.ExpiresAt, snap.Record.ReconcileAfter
					}
				}
				rec.Version = snap.Record.Version + 1
				_ = s.CompareAndSet(ctx, &rec, snap.Record.Version, snap.Record.Token)
			}
			if rapid.IntRange(0, 9).Draw(t, "advance") == 0 {
				now = now.Add(time.Duration(rapid.IntRange(0, 50).Draw(t, "by")) * time.Second)
			}
			if rapid.IntRange(0, 9).Draw(t, "due") == 0 {
				checkDue(t, s, rapid.IntRange(1, 50).Draw(t, "limit"))
			}
		}
		checkDue(t, s, 1000)
		for i := range s.shards {
			sh := &s.shards[i]
			for k := range sh.due {
				if n := len(sh.due[k].heap) + len(sh.due[k].pending); n > entriesMax(sh.used)+1 {
					t.Fatalf("shard %d kind %d holds %d entries for %d records", i, k, n, sh.used)
				}
			}
		}
	})
}

// checkDue compares Due with a scan of every record, for both kinds.
func checkDue(t *rapid.T, s *Store, limit int) {
	now := s.clock().UnixNano()
	for _, kind := range []store.DueKind{store.DueSweep, store.DueReconcile} {
		var want []due
		for i := range s.shards {
			for _, chunk := range s.shards[i].chunks {
				for j := range chunk {
					if at, ok := chunk[j].rec.dueAt(kind); ok && chunk[j].rec.status != core.StatusAbsent && at <= now {
						var d due
						d.at = at
						chunk[j].rec.get(&d.rec)
						want = append(want, d)
					}
				}
			}
		}
		slices.SortFunc(want, func(a, b due) int {
			return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.rec.Scope.Key, b.rec.Scope.Key))
		})
		got, err := s.Due(context.Background(), kind, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != min(limit, len(want)) {
			t.Fatalf("%v: %d listed, a scan finds %d (limit %d)", kind, len(got), len(want), limit)
		}
		// The same due times, most overdue first; records that became due at
		// the same instant may be listed in another order than by scope.
		current := map[core.Scope]due{}
		for _, d := range want {
			current[d.rec.Scope] = d
		}
		seen := map[core.Scope]bool{}
		for i := range got {
			d, ok := current[got[i].Scope]
			if !ok || seen[got[i].Scope] || d.rec.Version != got[i].Version || d.at != want[i].at {
				t.Fatalf("%v %d: %s is not the scan's next due record %s", kind, i, got[i].Describe(), want[i].rec.Describe())
			}
			seen[got[i].Scope] = true
		}
	}
}
