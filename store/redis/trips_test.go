package redisstore

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// scriptCounter counts the scripts a client runs: one round trip each.
type scriptCounter struct{ n atomic.Int64 }

func (c *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (c *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// TestOneScriptPerDecision: a new key, a key in flight, a replay and the
// executor's completion of the attempt it holds are one script call each;
// an event that must load first is two; a reserve that writes over an
// existing record (a retry after a failure) three.
func TestOneScriptPerDecision(t *testing.T) {
	ctx := context.Background()
	c := standaloneClient(t)
	counter := new(scriptCounter)
	c.AddHook(counter)
	s := newTestStore(t, c, Options{})
	p := core.PolicyDefault()
	sc := testScope("trips")
	calls := func(what string, want int64, f func() store.Applied) store.Applied {
		t.Helper()
		before := counter.n.Load()
		a := f()
		if got := counter.n.Load() - before; got != want {
			t.Fatalf("%s: %d script calls, want %d", what, got, want)
		}
		return a
	}
	apply := func(ev core.Event) func() store.Applied {
		return func() store.Applied {
			a, err := applyOver(ctx, s, &p, sc, ev)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
	}
	reserve := core.Event{Kind: core.EventReserve, Fingerprint: testFP}
	a := calls("a new key", 1, apply(reserve))
	tok := a.Transition.Decision.Token
	calls("a key in flight", 1, apply(reserve))
	calls("a heartbeat", 2, apply(core.Event{Kind: core.EventHeartbeat, Token: tok}))
	held := calls("a failure", 2, apply(core.Event{Kind: core.EventFail, Token: tok})).Record
	a = calls("a retry after the failure", 3, apply(reserve))
	held = a.Record
	calls("the held completion", 1, func() store.Applied {
		var out store.Applied
		ev := core.Event{Kind: core.EventComplete, Token: a.Transition.Decision.Token, Response: core.Response{StatusCode: 200}}
		if err := store.ApplyHeld(ctx, s, &held, ev, &p, &out); err != nil || out.Transition.Decision.Kind != core.DecisionCompleted {
			t.Fatalf("held completion: %s, %v", out.Transition.Describe(), err)
		}
		return out
	})
	if d := calls("a replay", 1, apply(reserve)).Transition.Decision.Kind; d != core.DecisionReplay {
		t.Fatalf("replay: %v", d)
	}
	calls("a load", 1, func() store.Applied {
		if _, err := s.Load(ctx, sc); err != nil {
			t.Fatal(err)
		}
		return store.Applied{}
	})
}
