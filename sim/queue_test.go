package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQueueSortsLikeASortedSlice: the heap pops items in (time, sequence)
// order, the order that makes a run deterministic.
func TestQueueSortsLikeASortedSlice(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var q queue
	var items []item
	for i := range 3000 {
		it := item{at: r.Int64N(50), seq: uint64(i), ev: int32(i)}
		items = append(items, it)
		q.push(it)
	}
	slices.SortFunc(items, func(a, b item) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return int(a.seq) - int(b.seq)
	})
	for i, want := range items {
		if got := q.pop(); got != want {
			t.Fatalf("pop %d: %+v, want %+v", i, got, want)
		}
	}
}
