package chaos

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/internal/chaos"
	"github.com/idemkit/idem/store"
	redisstore "github.com/idemkit/idem/store/redis"
)

// testConfig is a short run with ReplicasWait wait, over a store that
// newStore may change (a planted bug).
func testConfig(wait int, faults time.Duration, loses chaos.Loses, plant func(store.Store) store.Store) Config {
	return Config{Clients: 8, Keys: 16, Slide: 4, Backoff: 20 * time.Millisecond, Faults: faults,
		Seed: uint64(time.Now().UnixNano()), Wait: wait, MayLose: loses,
		NewStore: func(ctx context.Context, c *redis.ClusterClient) (store.Store, func(), error) {
			s, err := redisstore.New(ctx, c, redisstore.Options{Prefix: "idem-chaos-test", DueClaim: time.Second, ReplicasWait: wait})
			if err != nil {
				return nil, nil, err
			}
			return plant(s), s.Close, nil
		}}
}

func runShort(t *testing.T, cfg Config) (*Report, string) {
	t.Helper()
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Print(&b, cfg)
	return rep, b.String()
}

// TestChaosShort is make test's short chaos run (make chaos-redis is the
// long one, and measures WAIT 0 too) of the configuration whose
// guarantees are the stronger, ReplicasWait 1: every invariant must hold,
// and no acknowledged write may be lost.
func TestChaosShort(t *testing.T) {
	rep, out := runShort(t, testConfig(1, 5*time.Second, chaos.LosesReads, func(s store.Store) store.Store { return s }))
	os.Stdout.WriteString(out)
	if len(rep.Violations) > 0 {
		t.Fatalf("%d violations", len(rep.Violations))
	}
	if rep.Failovers == 0 {
		t.Fatal("no primary failed over: the run tested nothing")
	}
}

// TestChaosCatchesPhantomCompletions proves the harness can fail where a
// failover may lose writes (ReplicasWait 0): a store that acknowledges one
// completion in three without writing it loses writes without a crash,
// which no failover excuses.
func TestChaosCatchesPhantomCompletions(t *testing.T) {
	rep, out := runShort(t, testConfig(0, 3*time.Second, chaos.LosesWrites, func(s store.Store) store.Store { return chaos.PhantomCompletions(s, 3) }))
	t.Log(out)
	if rep.LostWrites == 0 || !strings.Contains(strings.Join(rep.Violations, "\n"), "lost without a crash") {
		t.Fatal("the planted phantom completions were not caught")
	}
}
