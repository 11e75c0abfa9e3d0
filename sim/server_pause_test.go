package sim

import (
	"cmp"
	"slices"
	"testing"
	"time"
)

// TestMayPause: a server may freeze unless every other server is frozen
// (a run of one server may always).
func TestMayPause(t *testing.T) {
	w, _ := ruleWorld(t, 1)
	if len(w.servers) != 3 {
		t.Fatalf("%d servers, want the default 3", len(w.servers))
	}
	a, b, c := w.servers[0], w.servers[1], w.servers[2]
	if !a.mayPause() {
		t.Error("nobody frozen: a server may not freeze")
	}
	b.pausedUntil = w.now + int64(time.Second)
	if !a.mayPause() {
		t.Error("one other server frozen: may not freeze beside it")
	}
	c.pausedUntil = w.now + 1
	if a.mayPause() {
		t.Error("every other server frozen: may freeze, leaving none running")
	}
	c.pausedUntil = w.now // its pause ends now: it runs
	if !a.mayPause() {
		t.Error("a server whose pause ended now counted as frozen")
	}
	w.servers = w.servers[:1]
	if !a.mayPause() {
		t.Error("a run of one server never freezes")
	}
}

// TestPausesLeaveAServerRunning runs worlds of frequent pauses and reads
// their traces: at no instant is every server frozen, while two are, now
// and then (the rule is "never the last", not "one at a time").
func TestPausesLeaveAServerRunning(t *testing.T) {
	cfg := ConfigDefault()
	cfg.Faults, cfg.Swarm, cfg.Requests, cfg.LinCheck = 1<<FaultPause, false, 400, false
	cfg.FaultRate[FaultPause] = 0.3
	pauses, most := 0, 0
	for seed := uint64(1); seed <= 10; seed++ {
		cfg.Seed = seed
		r := run(cfg, true)
		if len(r.Violations) > 0 {
			t.Fatalf("seed %d: violations: %v", seed, r.Violations)
		}
		type edge struct {
			at    int64
			delta int // +1 a pause starts, -1 it ends
		}
		var edges []edge
		for _, e := range r.Events {
			if e.What == WhatPause {
				edges = append(edges, edge{e.At, +1}, edge{e.At + e.Arg, -1})
				pauses++
			}
		}
		// Ends before starts at one instant: a pause ending at t leaves
		// its server running at t.
		slices.SortFunc(edges, func(x, y edge) int { return cmp.Or(cmp.Compare(x.at, y.at), x.delta-y.delta) })
		frozen := 0
		for _, e := range edges {
			frozen += e.delta
			most = max(most, frozen)
			if frozen >= cfg.Servers {
				t.Fatalf("seed %d: every server frozen at %v", seed, time.Duration(e.at))
			}
		}
	}
	if pauses < 30 {
		t.Fatalf("%d pauses in 10 seeds, want many", pauses)
	}
	if most != cfg.Servers-1 {
		t.Errorf("at most %d servers frozen at once, want %d", most, cfg.Servers-1)
	}
}

// TestHoldBoundsAPausedBacklog: a running server takes every arrival; a
// paused one holds Config.BacklogMax of them and refuses the rest, counted
// afresh for each pause; 0 bounds nothing.
func TestHoldBoundsAPausedBacklog(t *testing.T) {
	w, _ := ruleWorld(t, 1)
	s := w.servers[0]
	w.cfg.BacklogMax = 3
	for range 10 {
		if !s.hold() {
			t.Fatal("a running server refused an arrival")
		}
	}
	pause := func() { s.freeze(-1, int64(time.Second)) }
	taken := func(n int) (held int) {
		for range n {
			if s.hold() {
				held++
			}
		}
		return held
	}
	pause()
	if got := taken(5); got != 3 {
		t.Fatalf("a paused server held %d of 5 arrivals, want 3", got)
	}
	w.now += int64(time.Second) // the pause ends
	if got := taken(5); got != 5 {
		t.Fatalf("after its pause a server took %d of 5 arrivals, want 5", got)
	}
	pause() // a new pause: a new backlog
	if got := taken(4); got != 3 {
		t.Fatalf("a second pause held %d of 4 arrivals, want 3", got)
	}
	w.cfg.BacklogMax = 0
	if got := taken(100); got != 100 {
		t.Fatalf("no bound: a paused server held %d of 100 arrivals", got)
	}
}

// TestPausedBacklogRefuses runs worlds whose only fault is the pause: with
// a bound, clients hear refusals (nothing else refuses in them), and the
// seeds still hold every invariant; without one, none.
func TestPausedBacklogRefuses(t *testing.T) {
	cfg := ConfigDefault()
	cfg.Faults, cfg.Swarm, cfg.Requests, cfg.LinCheck = 1<<FaultPause, false, 400, false
	cfg.FaultRate[FaultPause] = 0.2
	refused := func(backlog int) (n int) {
		cfg.BacklogMax = backlog
		for seed := uint64(1); seed <= 5; seed++ {
			cfg.Seed = seed
			r := run(cfg, true)
			if len(r.Violations) > 0 {
				t.Fatalf("backlog %d, seed %d: violations: %v", backlog, seed, r.Violations)
			}
			for _, e := range r.Events {
				if e.What == WhatRefused {
					n++
				}
			}
		}
		return n
	}
	if n := refused(8); n == 0 {
		t.Error("a backlog of 8: no arrival refused in 5 seeds of frequent pauses")
	}
	if n := refused(0); n != 0 {
		t.Errorf("no bound: %d arrivals refused in worlds without crashes", n)
	}
}
