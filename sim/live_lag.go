package sim

import (
	"context"
	"sort"
	"sync"
	"time"
)

// hostLag measures the time a live run's host did not run it: a goroutine
// asks to sleep lagTick, again and again, and counts each wake-up later
// than lagStallMin past its time as a stall of that length. A live run's real
// time bounds (an action told of its lost lease within half a lease, every
// payload answered within the convergence bound) are bounds on the
// executor, not on a host whose two cores run the race detector over other
// packages: each bound is widened by the stalls measured inside its window,
// and only by them, so that on a quiet host the bounds are as tight as
// written. The run's report prints the stalls (Report.HostStall, HostStallMax).
type hostLag struct {
	mu     sync.Mutex
	total  time.Duration       // every stall so far, summed
	max    time.Duration       // the longest stall
	stalls []lagStall          // in order of their end
	nap    func(time.Duration) // time.Sleep; a test's host that stalls
}

// lagStall is one late wake-up: it ended at end, and the stalls up to and
// including it sum to upTo.
type lagStall struct {
	end  time.Time
	upTo time.Duration
}

const (
	lagTick     = 2 * time.Millisecond
	lagStallMin = 2 * time.Millisecond // a wake-up later than this is the host's, not the timer's
)

// run measures until ctx ends.
func (h *hostLag) run(ctx context.Context) {
	nap := h.nap
	if nap == nil {
		nap = time.Sleep
	}
	for ctx.Err() == nil {
		asked := time.Now()
		nap(lagTick)
		woke := time.Now()
		if late := woke.Sub(asked) - lagTick; late > lagStallMin {
			h.mu.Lock()
			h.total += late
			h.max = max(h.max, late)
			h.stalls = append(h.stalls, lagStall{end: woke, upTo: h.total})
			h.mu.Unlock()
		}
	}
}

// since is the stalls measured since t (a stall that ended after t counts
// whole: the window it overlaps began inside it or before).
func (h *hostLag) since(t time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := sort.Search(len(h.stalls), func(i int) bool { return h.stalls[i].end.After(t) })
	if i == 0 {
		return h.total
	}
	return h.total - h.stalls[i-1].upTo
}

// sum is every stall so far, and the longest.
func (h *hostLag) sum() (total, longest time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total, h.max
}

// stalledSince is the host's stalls since t, a time on the world's clock
// (live.now).
func (l *live) stalledSince(t time.Time) time.Duration {
	return l.lag.since(l.start.Add(t.Sub(epoch)))
}
