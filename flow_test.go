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
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// TestFlowStepByStep drives two requests' Flows by hand, interleaved, with
// no goroutine and no real time: the way the simulator drives the executor.
// The trace of effects is the contract a host relies on.
func TestFlowStepByStep(t *testing.T) {
	clock := fakeclock.New()
	mem := memstore.New(memstore.Options{Clock: clock.Now})
	p := idem.PolicyDefault()
	ex, err := idem.New(mem, idem.WithPolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var trace []string
	// step performs one effect of c, op by op for applies.
	step := func(name string, c *idem.Flow, out core.Response) {
		eff := c.Next()
		line := name + ": " + eff.Kind.String()
		switch eff.Kind {
		case idem.EffectApply:
			op := store.NewOp(request(key1, payload).Scope, eff.Event, &p)
			for !op.Done() {
				line += " " + op.Next().String()
				op.Do(ctx, mem)
			}
			a, err := op.Applied()
			line += " -> " + a.Transition.Decision.Kind.String()
			c.Applied(a, err)
		case idem.EffectRun:
			c.Ran(out, nil)
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
	step("first", first, core.Response{})
	step("second", second, core.Response{})
	step("second", second, core.Response{})
	step("second", second, core.Response{})
	step("first", first, created)
	step("first", first, core.Response{})
	step("second", second, core.Response{})
	step("second", second, core.Response{})
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
	if first.Next().Kind != idem.EffectAnswer || !first.Done() {
		t.Fatal("first is not done")
	}
}

// TestFlowWaitEndsOnEitherClock: a store clock that does not move cannot
// make the in-flight wait endless, and neither can a host that reports no
// time passing while the store's clock runs.
func TestFlowWaitEndsOnEitherClock(t *testing.T) {
	for _, frozen := range []string{"store", "host"} {
		clock := fakeclock.New()
		mem := memstore.New(memstore.Options{Clock: clock.Now})
		p := idem.PolicyDefault()
		ex, _ := idem.New(mem, idem.WithPolicy(p))
		ctx := context.Background()
		apply := func(c *idem.Flow) {
			var a store.Applied
			err := store.Apply(ctx, mem, request(key1, payload).Scope, c.Next().Event, &p, &a)
			c.Applied(&a, err)
		}
		owner, _ := ex.Begin(request(key1, payload))
		apply(owner)
		waiter, _ := ex.Begin(request(key1, payload))
		for i := 0; waiter.Next().Kind != idem.EffectAnswer; i++ {
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

// TestFlowRefusesAHostOutOfStep: reporting the wrong thing is an error, not a panic.
func TestFlowRefusesAHostOutOfStep(t *testing.T) {
	ex, _ := idem.New(memstore.New(memstore.Options{}))
	c, _ := ex.Begin(request(key1, payload))
	c.Ran(created, nil)
	if _, err := c.Result(); err == nil || c.Next().Kind != idem.EffectAnswer {
		t.Fatalf("Ran before Execute was accepted: %v", err)
	}
	c2, _ := ex.Begin(request(key1, payload))
	c2.Waited(time.Second) // ignored: not waiting
	if c2.Next().Kind != idem.EffectApply || c2.Next().Event.Kind != core.EventReserve {
		t.Fatalf("a stray Waited moved the flow: %v", c2.Next().Kind)
	}
}
