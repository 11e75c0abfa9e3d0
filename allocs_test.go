//go:build !race

package idem_test

import (
	"context"
	"testing"

	"github.com/idemkit/idem"
	memstore "github.com/idemkit/idem/store/mem"
)

// TestDoAllocs holds Do to the allocation targets of BENCHMARKS.md (issue
// 10 §5) over the memory store: a replay allocates only its copy of the
// stored response (issue 20 §3: one for the body, one for the headers if
// it has any), a new key at most 6 times. The race detector allocates on
// its own: `make test` runs this without it.
func TestDoAllocs(t *testing.T) {
	ctx := context.Background()
	fp, _, action, keys := benchFixture()
	// One shard, grown past 3,000 records before counting, so that the
	// store's own growth (its index doubles at 3,584) stays out of the count.
	ex, err := idem.New(memstore.New(memstore.Options{Shards: 1}))
	if err != nil {
		t.Fatal(err)
	}
	const warm = 3000
	for _, k := range keys[1:warm] {
		if _, err := ex.Do(ctx, request(k, fp), action); err != nil {
			t.Fatal(err)
		}
	}
	i := warm
	newKey := testing.AllocsPerRun(200, func() {
		if r, err := ex.Do(ctx, request(keys[i], fp), action); err != nil || r.Kind != idem.ResultExecuted {
			t.Fatal(r.Kind, err)
		}
		i++
	})
	replay := testing.AllocsPerRun(200, func() {
		if r, err := ex.Do(ctx, request(keys[1], fp), action); err != nil || r.Kind != idem.ResultReplayed {
			t.Fatal(r.Kind, err)
		}
	})
	t.Logf("allocations per Do: new key %.1f, replay %.1f", newKey, replay)
	if newKey > 6 {
		t.Errorf("a new key allocates %.1f times per Do, want at most 6", newKey)
	}
	if replay != 1 { // the fixture's response has a body and no headers
		t.Errorf("a replay allocates %.1f times per Do, want 1 (its copy of the body)", replay)
	}
}
