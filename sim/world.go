package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// epoch is virtual time zero.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// event is one thing scheduled to happen at a virtual instant: fn, or h's
// handle(kind). The hottest events use h, a pointer the event already has,
// so that scheduling them allocates no closure.
type event struct {
	fn   func()
	h    handler
	kind uint8
	// srv, if set, owns the event: it is dropped if srv crashed since
	// epoch, and waits while srv is paused (see server.run).
	srv   *server
	epoch int
}

// handler receives events scheduled with a kind instead of a closure.
type handler interface{ handle(kind uint8) }

func (e *event) fire() {
	if e.h != nil {
		e.h.handle(e.kind)
	} else {
		e.fn()
	}
}

// item is an event's place in the queue: (at, seq) orders it, seq breaking
// ties in scheduling order so that a run is a pure function of its seed.
// Items hold no pointers (the event sits in clock.events), so sifting them
// costs the garbage collector nothing.
type item struct {
	at  int64
	seq uint64
	ev  int32
}

// queue is a 4-ary min-heap of items: half the depth of a binary heap, and
// a node's children share a cache line. It is written out rather than built
// on container/heap to avoid boxing every event.
type queue []item

func (q queue) less(i, j int) bool { return q[i].before(&q[j]) }

func (q *queue) push(e item) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 4
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *queue) pop() item {
	h := *q
	top := h[0]
	last := len(h) - 1
	x := h[last]
	h = h[:last]
	// Bottom-up: move the hole at the root down to a leaf along the
	// smallest children, then sift the last item up from there. The last
	// item nearly always belongs near the bottom, so this saves comparing
	// it at every level on the way down.
	i := 0
	for {
		c := 4*i + 1
		if c >= len(h) {
			break
		}
		m := c
		for k := c + 1; k <= c+3 && k < len(h); k++ {
			if h.less(k, m) {
				m = k
			}
		}
		h[i] = h[m]
		i = m
	}
	for i > 0 {
		p := (i - 1) / 4
		if !x.before(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	if len(h) > 0 {
		h[i] = x
	}
	*q = h
	return top
}

// nearNanos splits the queue: most events are due within a few
// milliseconds (network and store latency) and a few are far off (timeouts,
// ticks). Two heaps keep the busy one small; the next event is the earlier
// of their two heads.
const nearNanos = int64(10 * time.Millisecond)

// clock is the virtual time and the event queue of one run.
type clock struct {
	now   int64 // nanoseconds since epoch
	seq   uint64
	near  queue
	far   queue
	lanes []lane
	// laneFirst is the lane whose head comes first, plus one (0: every lane
	// is empty, or there is none). A lane's head changes only when it is taken
	// or the lane was empty, so next scans the lanes only after it took a
	// lane's head, not at every event.
	laneFirst int
	count     int     // events scheduled and not yet taken
	last      item    // the event taken last
	events    []event // the scheduled events, by item.ev
	free      []int32 // unused indexes of events
}

// lane holds the events scheduled with one fixed delay (a timeout, a tick):
// they come due in the order they were scheduled, so a queue in arrival
// order keeps them sorted, at no cost per event. Most far events are
// timeouts that never matter, and they stay out of the heaps this way.
type lane struct {
	delay int64
	items []item
	head  int // items before head were taken
}

// fixedDelays gives each of delays (past nearNanos) its own lane.
func (c *clock) fixedDelays(delays ...int64) {
	for _, d := range delays {
		if d > nearNanos && !slices.ContainsFunc(c.lanes, func(l lane) bool { return l.delay == d }) {
			c.lanes = append(c.lanes, lane{delay: d})
		}
	}
}

// pending is the number of scheduled events.
func (c *clock) pending() int { return c.count }

// after schedules fn d from now.
func (c *clock) after(d int64, fn func()) { c.schedule(d, event{fn: fn}) }

// afterOn schedules fn d from now on server s, as of epoch.
func (c *clock) afterOn(s *server, epoch int, d int64, fn func()) {
	c.schedule(d, event{fn: fn, srv: s, epoch: epoch})
}

// afterH schedules h.handle(kind) d from now.
func (c *clock) afterH(d int64, h handler, kind uint8) { c.schedule(d, event{h: h, kind: kind}) }

// afterOnH schedules h.handle(kind) d from now on server s, as of epoch.
func (c *clock) afterOnH(s *server, epoch int, d int64, h handler, kind uint8) {
	c.schedule(d, event{h: h, kind: kind, srv: s, epoch: epoch})
}

func (c *clock) schedule(d int64, e event) {
	c.seq++
	c.count++
	it := item{at: c.now + max(d, 0), seq: c.seq, ev: c.store(e)}
	if d <= nearNanos {
		c.near.push(it)
		return
	}
	for k := range c.lanes {
		if l := &c.lanes[k]; l.delay == d {
			if l.head == len(l.items) {
				l.items, l.head = l.items[:0], 0
				if h := c.laneHead(); h == nil || it.before(h) {
					c.laneFirst = k + 1
				}
			}
			l.items = append(l.items, it)
			return
		}
	}
	c.far.push(it)
}

// scheduleAll schedules events[i] at ats[i] (none before now), taking their
// sequence numbers in that order, as one lane sorted up front: events known
// from the start, such as the requests' arrivals, wait there rather than
// make the heaps deeper all run.
func (c *clock) scheduleAll(ats []int64, events []event) {
	l := lane{delay: -1} // schedule never matches it
	for i, e := range events {
		c.seq++
		c.count++
		l.items = append(l.items, item{at: ats[i], seq: c.seq, ev: c.store(e)})
	}
	slices.SortFunc(l.items, func(a, b item) int {
		switch {
		case a.before(&b):
			return -1
		case b.before(&a):
			return 1
		}
		return 0
	})
	c.lanes = append(c.lanes, l)
	c.findLaneFirst()
}

// first is the lane's head, nil if the lane is empty.
func (l *lane) first() *item {
	if l.head == len(l.items) {
		return nil
	}
	return &l.items[l.head]
}

// laneHead is the first of the lanes' heads, nil if every lane is empty.
func (c *clock) laneHead() *item {
	if c.laneFirst == 0 {
		return nil
	}
	return c.lanes[c.laneFirst-1].first()
}

// findLaneFirst sets laneFirst by looking at every lane's head.
func (c *clock) findLaneFirst() {
	c.laneFirst = 0
	var best *item
	for k := range c.lanes {
		if h := c.lanes[k].first(); h != nil && (best == nil || h.before(best)) {
			best, c.laneFirst = h, k+1
		}
	}
}

// store puts e in the slab of scheduled events and returns its index.
func (c *clock) store(e event) int32 {
	if n := len(c.free); n > 0 {
		i := c.free[n-1]
		c.free = c.free[:n-1]
		c.events[i] = e
		return i
	}
	c.events = append(c.events, e)
	return int32(len(c.events) - 1)
}

// next takes the earliest event off the queue and moves the time to it: the
// earliest of the heads of the two heaps and the lanes.
func (c *clock) next() event {
	var best *item
	from := -3 // -2 near, -1 far, else a lane
	if len(c.near) > 0 {
		best, from = &c.near[0], -2
	}
	if len(c.far) > 0 && (best == nil || c.far[0].before(best)) {
		best, from = &c.far[0], -1
	}
	if h := c.laneHead(); h != nil && (best == nil || h.before(best)) {
		best, from = h, c.laneFirst-1
	}
	var it item
	switch from {
	case -2:
		it = c.near.pop()
	case -1:
		it = c.far.pop()
	default:
		l := &c.lanes[from]
		it = l.items[l.head]
		l.head++
		if l.head >= 1024 && 2*l.head >= len(l.items) {
			// Drop the taken half, so that a lane's memory stays bounded.
			l.items = l.items[:copy(l.items, l.items[l.head:])]
			l.head = 0
		}
		c.findLaneFirst()
	}
	// An assertion that stays on: events leave in (time, sequence) order,
	// or a run would not be the pure function of its seed it claims to be.
	if it.before(&c.last) {
		panic(fmt.Sprintf("sim: event queue out of order: (%d, %d) after (%d, %d)", it.at, it.seq, c.last.at, c.last.seq))
	}
	c.last = it
	c.count--
	c.now = it.at
	e := c.events[it.ev]
	c.events[it.ev] = event{}
	c.free = append(c.free, it.ev)
	return e
}

// before orders items by time, then by scheduling order.
func (a *item) before(b *item) bool { return a.at < b.at || a.at == b.at && a.seq < b.seq }

// Time is the virtual time as a time.Time, the store's clock.
func (c *clock) Time() time.Time { return epoch.Add(time.Duration(c.now)) }

// rngs are the components' random sources: each its own sub-seed of the run's
// seed, so that changing one component's parameters does not reshuffle the
// choices of the others.
type rngs struct {
	swarm, clients, servers, net, store, gateway *rand.Rand
	// path draws the seed's store path (Config.StorePath) and policy the
	// seed's lifecycle policy (Config.DrawLifecycle): streams of their own,
	// so that drawing them changes no other draw.
	path, policy *rand.Rand
	// payload draws each request's key and payload (and nothing else, so
	// that they do not depend on how the run went); render how clients
	// write payloads out; clock the store clock's grain and steps.
	payload, render, clock *rand.Rand
	// operator draws the operator's sessions (operator.go).
	operator *rand.Rand
}

func newRngs(seed uint64) rngs {
	sub := func(component uint64) *rand.Rand {
		return rand.New(rand.NewPCG(splitmix(seed^component*0x9e3779b97f4a7c15), splitmix(seed+component)))
	}
	return rngs{swarm: sub(1), clients: sub(2), servers: sub(3), net: sub(4), store: sub(5), gateway: sub(6), path: sub(7), policy: sub(8), payload: sub(9), clock: sub(10), render: sub(11), operator: sub(12)}
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// between draws a duration uniformly in [lo, hi].
func between(r *rand.Rand, lo, hi time.Duration) int64 {
	if hi <= lo {
		return int64(lo)
	}
	return int64(lo) + r.Int64N(int64(hi-lo)+1)
}
