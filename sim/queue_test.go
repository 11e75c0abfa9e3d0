package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
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

// TestClockOrdersNearAndFar: the two heaps and the lanes together still give
// events in (time, scheduling order), across the near/far split and ties.
func TestClockOrdersNearAndFar(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var c clock
	c.fixedDelays(nearNanos+1, int64(time.Second), int64(300*time.Millisecond))
	type fired struct {
		at  int64
		seq int
	}
	var got []fired
	n := 0
	var schedule func()
	schedule = func() {
		for range 1 + r.IntN(3) {
			if n >= 20000 {
				return
			}
			n++
			seq := n
			var d int64
			switch r.IntN(8) {
			case 0:
				d = nearNanos // the boundary, and ties
			case 5:
				d = nearNanos + 1 // lanes: fixed delays
			case 6:
				d = int64(time.Second)
			case 7:
				d = int64(300 * time.Millisecond)
			case 1:
				d = r.Int64N(20 * int64(time.Second)) // far off
			default:
				d = r.Int64N(3 * nearNanos)
			}
			c.after(d, func() { got = append(got, fired{c.now, seq}); schedule() })
		}
	}
	schedule()
	for c.pending() > 0 {
		e := c.next()
		e.fire()
	}
	for i := 1; i < len(got); i++ {
		if got[i].at < got[i-1].at {
			t.Fatalf("event %d at %d ran after one at %d", got[i].seq, got[i].at, got[i-1].at)
		}
		if got[i].at == got[i-1].at && got[i].seq < got[i-1].seq {
			t.Fatalf("at %d: event %d ran after the later-scheduled %d", got[i].at, got[i].seq, got[i-1].seq)
		}
	}
	if len(got) != n {
		t.Fatalf("%d of %d events ran", len(got), n)
	}
}

// TestScheduledUpFrontKeepsOrder: events scheduled all at once at the start
// (the arrivals) keep their places among events scheduled later at the same
// instants. (Found in review, when arrivals entered the queue one at a time
// with early sequence numbers: two arrivals tie at T, the first one's client
// timeout goes into the lane for T+D, and the arrival at T+D, whose number is
// smaller, must still run first.)
func TestScheduledUpFrontKeepsOrder(t *testing.T) {
	const d = int64(time.Second)
	const at = int64(5 * time.Millisecond)
	var c clock
	c.fixedDelays(d)
	var got []string
	record := func(name string, then func()) func() {
		return func() {
			got = append(got, name)
			if then != nil {
				then()
			}
		}
	}
	c.scheduleAll([]int64{at + d, at, at}, []event{
		{fn: record("arrival 3", nil)},
		{fn: record("arrival 1", func() { c.schedule(d, event{fn: record("timeout of 1", nil)}) })},
		{fn: record("arrival 2", nil)},
	})
	for c.pending() > 0 {
		e := c.next()
		e.fire()
	}
	want := []string{"arrival 1", "arrival 2", "arrival 3", "timeout of 1"}
	if !slices.Equal(got, want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
}
