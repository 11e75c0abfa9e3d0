package main

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/redisserver"
	"github.com/idemkit/idem/sim"
	"github.com/idemkit/idem/store"
)

// TestLiveOnRedis: simrun -live -store redis runs the workload over a Redis
// server's store (the test's own), the checkers hold, every call went
// through the driver's scripts, and nothing is left on the server.
func TestLiveOnRedis(t *testing.T) {
	addr := redisserver.Start(t)
	code, out, errOut := simrun(t, "-live", "-store", "redis", "-redis", addr, "-seed", "5", "-seeds", "2", "-requests", "120", "-clients", "12")
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"store:      live -store redis -redis " + addr, "violations: 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	stats, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil || !strings.Contains(stats, "cmdstat_evalsha:calls=") {
		t.Fatalf("the driver's scripts did not run: %v\n%s", err, stats)
	}
	if n, err := c.DBSize(context.Background()).Result(); err != nil || n != 0 {
		t.Fatalf("%d keys left after the run (%v)", n, err)
	}
	for _, args := range [][]string{{"-store", "redis", "-redis", addr}, {"-live", "-store", "redis"}, {"-live", "-store", "etcd"}} {
		if code, _, errOut := simrun(t, args...); code != 2 || !strings.Contains(errOut, "-store") {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
}

// losesCompletions is a broken driver over a real one: it acknowledges a
// completion, with the record the core's step makes, and writes nothing.
type losesCompletions struct{ sim.LiveStore }

func (s losesCompletions) Apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
	if ev.Kind != core.EventComplete {
		return s.LiveStore.Apply(ctx, scope, ev, p, out)
	}
	snap, err := s.Load(ctx, scope)
	if err != nil {
		return err
	}
	ev.Now, out.Before, out.Now = snap.Now, snap.Record.Status, snap.Now
	out.Record = snap.Record
	out.Transition, err = core.Step(&out.Record, &ev, p)
	return err
}

// TestLiveOnRedisCatchesALostCompletion: the checkers hold a Redis store to
// the invariants as they hold the memory store: a driver that loses
// completions it acknowledged is caught.
func TestLiveOnRedisCatchesALostCompletion(t *testing.T) {
	open, closeClient, err := openRedis(redisserver.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	defer closeClient()
	broken := func(seed uint64) (sim.LiveStore, func(), error) {
		s, closeStore, err := open(seed)
		return losesCompletions{s}, closeStore, err
	}
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := sim.ConfigDefault()
		cfg.Seed, cfg.Requests, cfg.Clients, cfg.Faults = seed, 60, 6, 0
		r, err := sim.RunLiveOn(cfg, broken)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Violations) > 0 {
			t.Logf("seed %d: invariant %d (%s): %s", seed, r.Violations[0].Invariant, r.Violations[0].Name, r.Violations[0].Detail)
			return
		}
	}
	t.Fatal("a store that loses completions passed three live runs over Redis")
}
