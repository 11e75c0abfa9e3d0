package sim

import (
	"fmt"
	"testing"

	"github.com/idemkit/idem"
)

// TestRecountHoldsEveryCounter: every counter of SPEC §7 that counts an
// applied event (reserve's six, zombie_key and reconcile.scheduled for the
// servers; ttl_pruned and the reconciler's two besides, in a live run)
// is compared with the recount, and a count one under or one over it
// breaks invariant 12. The names are SPEC §7's, written out here.
func TestRecountHoldsEveryCounter(t *testing.T) {
	servers := []string{
		"api.idempotency.reserve.created.count", "api.idempotency.reserve.replay.count",
		"api.idempotency.reserve.in_progress.count", "api.idempotency.reserve.key_misuse.count",
		"api.idempotency.reserve.failed_retry.count", "api.idempotency.reserve.unknown.count",
		"api.idempotency.zombie_key.count", "api.idempotency.reconcile.scheduled.count",
	}
	workers := []string{"api.idempotency.ttl_pruned.count", "api.idempotency.reconcile.resolved.count", "api.idempotency.reconcile.failed.count"}
	byName := map[string]idem.Counter{}
	for _, k := range idem.Counters() {
		byName[k.Name()] = k
	}
	w, _ := ruleWorld(t, 1)
	for _, c := range []struct {
		which []idem.Counter
		names []string
	}{{serverCounters, servers}, {allCounters, append(servers[:len(servers):len(servers)], workers...)}} {
		for _, name := range c.names {
			k, ok := byName[name]
			if !ok {
				t.Fatalf("idem has no counter %s", name)
			}
			var r counterRecount
			for i := range r.n {
				r.n[i] = 5
			}
			for _, got := range []uint64{4, 5, 6} {
				counted := func(c idem.Counter) uint64 {
					if c == k {
						return got
					}
					return r.n[c]
				}
				r.compare(&w.check, counted, c.which)
				want := invMetrics
				if got == r.n[k] {
					want = -1
				}
				expect(t, w, want, fmt.Sprintf("%s counted %d, recounted %d, among %d counters", name, got, r.n[k], len(c.which)))
			}
		}
	}
}
