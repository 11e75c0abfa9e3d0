package sim

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// baselineSeeds is how many seeds of the default settings each baseline
// gets to be caught in (issue: within 200).
const baselineSeeds = 200

// TestBaselinesAreCaughtAndCorrectPasses runs the same seeds with every
// baseline: each anti-pattern must break an invariant within baselineSeeds
// seeds, and the correct baseline must break none on any of them.
func TestBaselinesAreCaughtAndCorrectPasses(t *testing.T) {
	cfg := ConfigDefault()
	seeds := baselineSeeds
	if testing.Short() {
		seeds = 50
	}
	for _, p := range Baselines() {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			c := cfg
			c.Baseline = p
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				c.Seed = seed
				r, err := Run(c)
				if err != nil {
					t.Fatal(err)
				}
				if p == BaselineCorrect {
					for _, v := range r.Violations {
						t.Fatalf("seed %d: invariant %d (%s) in %s: %s\n%s\nreproduce: %s", seed, v.Invariant, v.Name, v.Scope, v.Detail, strings.Join(v.Events, "\n"), c.Command())
					}
					// A key the reconciler gave up on (the policy's attempts
					// ran out) is left to an operator, with its request.
					if !r.Converged && r.Abandoned == 0 || r.Done+r.Abandoned < r.Requests || r.Requests != c.Requests {
						t.Fatalf("seed %d: did not converge (%d/%d answered)", seed, r.Done, r.Requests)
					}
					continue
				}
				if len(r.Violations) > 0 {
					v := r.Violations[0]
					t.Logf("%v caught at seed %d: invariant %d (%s): %s", p, seed, v.Invariant, v.Name, v.Detail)
					return
				}
			}
			if p != BaselineCorrect {
				t.Fatalf("%v was not caught in %d seeds", p, seeds)
			}
		})
	}
}

// allFaultsAt is the default config with every fault at rate, no swarm.
func allFaultsAt(rate float64) Config {
	cfg := ConfigDefault()
	cfg.Swarm = false
	for f := range cfg.FaultRate {
		cfg.FaultRate[f] = rate
	}
	return cfg
}

// TestEveryFaultAtOnce runs the correct baseline with every fault on at a high
// fixed rate (no swarm), and with the gateway deduplicating as well.
func TestEveryFaultAtOnce(t *testing.T) {
	for _, idempotentGateway := range []bool{false, true} {
		cfg := allFaultsAt(0.05)
		cfg.GatewayIdempotent = idempotentGateway
		for seed := uint64(1); seed <= 20; seed++ {
			cfg.Seed = seed
			r, err := Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range r.Violations {
				t.Fatalf("%s: invariant %d: %s\n%s", cfg.Command(), v.Invariant, v.Detail, strings.Join(v.Events, "\n"))
			}
		}
	}
}

// TestFaultsFire checks that every injector actually fires, so that a
// passing run is not a quiet one.
func TestFaultsFire(t *testing.T) {
	cfg := allFaultsAt(0.05)
	cfg.Seed = 8 // a seed on which every injector fires (7 was until the operator's sessions came)
	r, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[What]int{}
	for _, e := range r.Events {
		seen[e.What]++
	}
	for _, w := range []What{WhatCrash, WhatRestart, WhatLost, WhatPause, WhatFaultAfter, WhatStoreError, WhatDecline, WhatDeadline, WhatTimeout, WhatRefused, WhatShow, WhatEvict} {
		if seen[w] == 0 {
			t.Errorf("no %v event in a run with every fault at 5%%", w)
		}
	}
	if r.Status422 == 0 || r.Replays == 0 || r.Status409 == 0 || r.Status503 == 0 {
		t.Errorf("answers: 422=%d replays=%d 409=%d 503=%d", r.Status422, r.Replays, r.Status409, r.Status503)
	}
	for _, c := range r.Counters {
		// Rare by design: TTLs, give-ups, and refusals (which need a large
		// answer; TestStoreRejectionsFire makes them).
		if c.Value == 0 && !strings.Contains(c.Name, "ttl_pruned") && !strings.Contains(c.Name, "reconcile.failed") && !strings.Contains(c.Name, "store.rejected") {
			t.Errorf("counter %s stayed 0", c.Name)
		}
	}
}

// TestStoreRejectionsFire: with many large answers, the store rejects
// some (FaultStoreReject), the rejections are counted as such and not as
// outages, and every invariant holds.
func TestStoreRejectionsFire(t *testing.T) {
	cfg := allFaultsAt(0.05)
	cfg.FaultRate[FaultGatewayOddAnswer] = 0.5
	for seed := uint64(1); seed <= 5; seed++ {
		cfg.Seed = seed
		r, err := Run(cfg)
		if err != nil || len(r.Violations) > 0 {
			t.Fatalf("seed %d: %v %v", seed, err, r.Violations)
		}
		refused := 0
		for _, e := range r.Events {
			if e.What == WhatStoreRejected {
				refused++
			}
		}
		var counted uint64
		for _, c := range r.Counters {
			if c.Name == idem.CounterStoreRejected.Name() {
				counted = c.Value
			}
		}
		if refused == 0 || counted == 0 {
			t.Fatalf("seed %d: %d refusals, %d counted", seed, refused, counted)
		}
	}
}

// TestDeterministic: the same config gives the same run, event for event.
func TestDeterministic(t *testing.T) {
	cfg := ConfigDefault()
	cfg.Seed = 42
	a, _ := Run(cfg)
	b, _ := Run(cfg)
	if !reflect.DeepEqual(a.Events, b.Events) || fmt.Sprint(a.Counters) != fmt.Sprint(b.Counters) {
		t.Fatal("two runs of one seed differ")
	}
	cfg.Seed = 43
	c, _ := Run(cfg)
	if reflect.DeepEqual(a.Events, c.Events) {
		t.Fatal("two seeds gave the same run")
	}
}

// TestSubSeeds: changing one component's parameters leaves the others'
// random choices alone (here: the arrival times of the requests).
func TestSubSeeds(t *testing.T) {
	// What the clients drew: when each request started, and the keys they
	// drew as requests arrived, between the gateway's draws.
	clients := func(mutate func(*Config)) ([]int64, []core.Scope) {
		cfg := ConfigDefault()
		cfg.Faults = 0
		mutate(&cfg)
		r, _ := Run(cfg)
		var s []int64
		for _, e := range r.Events {
			if e.What == WhatSend && e.Arg == 1 {
				s = append(s, e.At)
			}
		}
		return s, r.Scopes
	}
	starts, keys := clients(func(*Config) {})
	slowerStarts, slowerKeys := clients(func(c *Config) {
		c.GatewayLatencyMin, c.GatewayLatencyMax = 3*c.GatewayLatencyMin, 3*c.GatewayLatencyMax
	})
	if !reflect.DeepEqual(starts, slowerStarts) || !reflect.DeepEqual(keys, slowerKeys) {
		t.Fatal("the gateway's latency changed what the clients drew")
	}
}

func TestInvalidConfig(t *testing.T) {
	for _, mutate := range []func(*Config){
		func(c *Config) { c.Requests = 0 },
		func(c *Config) { c.Clients = 0 },
		func(c *Config) { c.Servers = -1 },
		func(c *Config) { c.FaultRate[3] = 2 },
		func(c *Config) { c.Lifecycle.LeaseDuration = 0 },
		func(c *Config) { c.Baseline = 99 },
	} {
		cfg := ConfigDefault()
		mutate(&cfg)
		if _, err := Run(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// TestCountersHoldEveryCounter: the simulator's metrics sink has room for
// every counter idem defines.
func TestCountersHoldEveryCounter(t *testing.T) {
	var c counters
	for _, k := range idem.Counters() {
		c.Add(k, idem.Labels{}, 1)
		if c.Total(k) != 1 {
			t.Fatalf("counter %s is dropped", k.Name())
		}
	}
}
