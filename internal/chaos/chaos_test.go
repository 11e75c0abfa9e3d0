package chaos

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// calm is a Target without faults, over a memory store.
type calm struct {
	s store.Store
	d time.Duration
}

func (c calm) Faults(ctx context.Context, _ func(kill func())) error {
	time.Sleep(c.d)
	return nil
}

func (c calm) Open(ctx context.Context, keys []core.Scope) (int, int, error) {
	return CountOpen(ctx, c.s, keys)
}

func runCalm(t *testing.T, s store.Store, cfg Config) *Report {
	t.Helper()
	cfg.Name, cfg.Clients, cfg.Keys, cfg.Seed = "calm", 8, 8, uint64(time.Now().UnixNano())
	cfg.Slide = 4
	rep, err := Run(context.Background(), cfg, s, calm{s: s, d: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	rep.Print(&b, "calm: seed "+strconv.FormatUint(cfg.Seed, 10), "faults: none")
	t.Log(b.String())
	return rep
}

// TestRunCalm: over the memory store, without faults, every invariant
// holds and nothing is lost.
func TestRunCalm(t *testing.T) {
	rep := runCalm(t, memstore.New(memstore.Options{}), Config{})
	if len(rep.Violations) > 0 || rep.LostWrites+rep.LostSeen > 0 || rep.Executed == 0 {
		t.Fatalf("a calm run: %d violations, %d writes lost, %d executed", len(rep.Violations), rep.LostWrites, rep.Executed)
	}
}

// TestRunCatchesPhantomCompletions: a store that acknowledges completions
// it never wrote is caught, as writes lost without a crash, even where a
// crash may lose writes.
func TestRunCatchesPhantomCompletions(t *testing.T) {
	rep := runCalm(t, PhantomCompletions(memstore.New(memstore.Options{}), 3), Config{MayLose: LosesWrites})
	if rep.LostWrites == 0 || len(rep.Violations) == 0 || !strings.Contains(strings.Join(rep.Violations, "\n"), "lost without a crash") {
		t.Fatalf("phantom completions not caught: %d writes lost, violations %q", rep.LostWrites, rep.Violations)
	}
}
