package idem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/fakeclock"
	memstore "github.com/idemkit/idem/store/mem"
)

// TestCallStepByStep drives two requests' Calls by hand, interleaved, with
// no goroutine and no real time: the way the simulator drives the executor.
// The trace of effects is the contract a host relies on.
func TestCallStepByStep(t *testing.T) {
	clock := fakeclock.New()
	mem := memstore.New(memstore.Options{Clock: clock.Now})
	p := idem.DefaultPolicy()
	ex, err := idem.New(mem, idem.WithPolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var trace []string
	// step performs one effect of c, op by op for applies.
	step := func(name string, c *idem.Call, out idem.Outcome) {
		eff := c.Next()
		line := name + ": " + eff.Kind.String()
		switch eff.Kind {
		case idem.EffectApply:
			op := idem.NewOp(&p, nil, request(key1, payload).Scope, eff.Event)
			for op.Pending() != idem.OpDone {
				line += " " + op.Pending().String()
				op.Do(ctx, mem)
			}
			a, err := op.Result()
			line += " -> " + a.Result.Decision.Kind.String()
			c.Applied(&a, err)
		case idem.EffectRun:
			c.Ran(out)
		case idem.EffectWait:
			line += " " + eff.Wait.String()
			clock.Advance(eff.Wait / 2)
			c.Waited(eff.Wait / 2)
		}
		trace = append(trace, line)
	}
	first, err := ex.Begin(request(key1, payload))
	if err != nil {
		t.Fatal(err)
	}
	second, _ := ex.Begin(request(key1, payload))
	step("first", first, idem.Outcome{})
	step("second", second, idem.Outcome{})
	step("second", second, idem.Outcome{})
	step("second", second, idem.Outcome{})
	step("first", first, idem.Outcome{Response: created})
	step("first", first, idem.Outcome{})
	step("second", second, idem.Outcome{})
	step("second", second, idem.Outcome{})
	want := []string{
		"first: apply load insert -> execute",
		"second: apply load -> in_flight",
		"second: wait 200ms",
		"second: apply load -> in_flight",
		"first: run",
		"first: apply load compare_and_set -> completed",
		"second: wait 100ms",
		"second: apply load -> replay",
	}
	if got := strings.Join(trace, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("trace:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	r, err := second.Result()
	if err != nil || r.Kind != idem.ResultReplayed || !r.Response.Equal(created) {
		t.Fatalf("second: %+v %v", r, err)
	}
	if r, err := first.Result(); err != nil || r.Kind != idem.ResultExecuted || !r.Recorded {
		t.Fatalf("first: %+v %v", r, err)
	}
	if first.Next().Kind != idem.EffectDone {
		t.Fatal("first is not done")
	}
}

// TestCallWaitEndsOnEitherClock: a store clock that does not move cannot
// make the in-flight wait endless, and neither can a host that reports no
// time passing while the store's clock runs.
func TestCallWaitEndsOnEitherClock(t *testing.T) {
	for _, frozen := range []string{"store", "host"} {
		clock := fakeclock.New()
		mem := memstore.New(memstore.Options{Clock: clock.Now})
		p := idem.DefaultPolicy()
		ex, _ := idem.New(mem, idem.WithPolicy(p))
		ctx := context.Background()
		apply := func(c *idem.Call) {
			a, err := idem.ApplyOver(ctx, mem, &p, nil, request(key1, payload).Scope, c.Next().Event)
			c.Applied(&a, err)
		}
		owner, _ := ex.Begin(request(key1, payload))
		apply(owner)
		waiter, _ := ex.Begin(request(key1, payload))
		for i := 0; waiter.Next().Kind != idem.EffectDone; i++ {
			if i > 100 {
				t.Fatalf("%s clock frozen: the wait never ends", frozen)
			}
			switch waiter.Next().Kind {
			case idem.EffectApply:
				apply(waiter)
			case idem.EffectWait:
				if frozen == "store" {
					waiter.Waited(50 * time.Millisecond)
				} else {
					clock.Advance(50 * time.Millisecond)
					waiter.Waited(0)
				}
			}
		}
		if _, err := waiter.Result(); !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("%s: %v", frozen, err)
		}
	}
}

// TestCallRefusesAHostOutOfStep: reporting the wrong thing is an error, not a panic.
func TestCallRefusesAHostOutOfStep(t *testing.T) {
	ex, _ := idem.New(memstore.New(memstore.Options{}))
	c, _ := ex.Begin(request(key1, payload))
	c.Ran(idem.Outcome{Response: created})
	if _, err := c.Result(); err == nil || c.Next().Kind != idem.EffectDone {
		t.Fatalf("Ran before Execute was accepted: %v", err)
	}
	c2, _ := ex.Begin(request(key1, payload))
	c2.Waited(time.Second) // ignored: not waiting
	if c2.Next().Kind != idem.EffectApply || c2.Next().Event.Kind != core.EventReserve {
		t.Fatalf("a stray Waited moved the call: %v", c2.Next().Kind)
	}
}
