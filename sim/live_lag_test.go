package sim

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestHostLagSince: a window counts the stalls that ended inside it, whole,
// and none before it; the total and the longest are kept.
func TestHostLagSince(t *testing.T) {
	t0 := time.Unix(1000, 0)
	h := &hostLag{}
	for _, s := range []struct {
		at  time.Duration
		len time.Duration
	}{{10 * time.Millisecond, 3 * time.Millisecond}, {50 * time.Millisecond, 40 * time.Millisecond}, {90 * time.Millisecond, 5 * time.Millisecond}} {
		h.total += s.len
		h.max = max(h.max, s.len)
		h.stalls = append(h.stalls, lagStall{end: t0.Add(s.at), upTo: h.total})
	}
	for _, c := range []struct {
		from time.Duration
		want time.Duration
	}{{0, 48 * time.Millisecond}, {10 * time.Millisecond, 45 * time.Millisecond}, {20 * time.Millisecond, 45 * time.Millisecond}, {60 * time.Millisecond, 5 * time.Millisecond}, {90 * time.Millisecond, 0}, {time.Second, 0}} {
		if got := h.since(t0.Add(c.from)); got != c.want {
			t.Errorf("since(+%v) = %v, want %v", c.from, got, c.want)
		}
	}
	if total, longest := h.sum(); total != 48*time.Millisecond || longest != 40*time.Millisecond {
		t.Errorf("sum = %v, %v; want 48ms, 40ms", total, longest)
	}
}

// TestHostLagMeasures: a host that does not wake the meter for 30 ms is
// measured as stalled that long, and one that wakes it on time not at all.
func TestHostLagMeasures(t *testing.T) {
	var naps atomic.Int32
	h := &hostLag{nap: func(d time.Duration) {
		if naps.Add(1) == 5 {
			d += 30 * time.Millisecond
		}
		time.Sleep(d)
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.run(ctx); close(done) }()
	for naps.Load() < 10 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	total, longest := h.sum()
	if longest < 30*time.Millisecond || total < longest {
		t.Errorf("a 30 ms stall measured as %v (longest %v)", total, longest)
	}
	if len(h.stalls) == 0 || h.since(h.stalls[len(h.stalls)-1].end) != 0 {
		t.Errorf("stalls %v: none after the last one's end", h.stalls)
	}
}

// TestLiveLateArrivalHasItsBound: a run past its bound is out of time,
// until a client makes a request late (one after a slow one): that
// request has the convergence bound from its own arrival. An earlier
// arrival noted afterwards moves nothing back.
func TestLiveLateArrivalHasItsBound(t *testing.T) {
	// Arrivals for 1 s, then 2 s to converge.
	l := &live{start: time.Now().Add(-10 * time.Second), giveUpAfter: 3 * time.Second, convergeAfter: 2 * time.Second}
	if l.inTime() {
		t.Fatal("10 s into a run with a 3 s bound and no late arrival: still in time")
	}
	l.arrived()
	if !l.inTime() {
		t.Fatal("a request made now, with 2 s to converge: out of time")
	}
	at := l.lastArrival.Load()
	l.start = l.start.Add(5 * time.Second) // a clock that reads an earlier arrival
	l.arrived()
	if got := l.lastArrival.Load(); got != at {
		t.Fatalf("an earlier arrival moved the last one from %v to %v", time.Duration(at), time.Duration(got))
	}
}
