// Command chaosredis runs the chaos harness of store/redis (make
// chaos-redis): for each -wait (Options.ReplicasWait), a cluster of its
// own, its primaries killed and failed over while clients retry payments,
// then the invariants and the figures. It exits non-zero on any violation,
// that is on anything the package documentation does not say a failover
// may do with that WAIT. With WAIT 0, a killed primary may lose
// acknowledged writes, and with them at most once on their keys: those
// losses, second executions and answers no longer replayed are measured,
// not violations. With WAIT 1 or more, an acknowledged write lost is a
// violation; only what a reader was shown before its writer's WAIT
// returned (a replay, an answer in flight) may be lost, and is measured.
// Whatever the WAIT, a loss without a crash, a key left open and a key
// without a definitive answer are violations.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	ichaos "github.com/idemkit/idem/internal/chaos"
	"github.com/idemkit/idem/store"
	redisstore "github.com/idemkit/idem/store/redis"
	"github.com/idemkit/idem/store/redis/internal/chaos"
)

func main() {
	var cfg chaos.Config
	flag.IntVar(&cfg.Clients, "clients", 24, "concurrent clients, each retrying")
	flag.IntVar(&cfg.Keys, "keys", 16, "distinct keys the clients share at a time")
	flag.IntVar(&cfg.Slide, "slide", 4, "how many answers make a new key join them (and the oldest leave)")
	flag.DurationVar(&cfg.Faults, "faults", 30*time.Second, "how long the fault loop runs, per WAIT")
	flag.DurationVar(&cfg.NodeTimeout, "node-timeout", time.Second, "the cluster's cluster-node-timeout")
	flag.BoolVar(&cfg.Settle, "settle", false, "let every shard recover (its rejoined replica follow the stream) before the next failure")
	waits := flag.String("wait", "0,1", "the ReplicasWait of each run, comma-separated")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "seed")
	flag.Parse()
	cfg.Seed = *seed
	cfg.Backoff = 20 * time.Millisecond // as a client would, rather than spin on a cluster that is down
	ws, err := parseWaits(*waits)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaosredis: -wait:", err)
		os.Exit(2)
	}
	var reps []*chaos.Report
	failed := false
	for _, w := range ws {
		cfg.Wait, cfg.MayLose = w, mayLose(w)
		cfg.NewStore = newStore(w)
		rep, err := chaos.Run(context.Background(), cfg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "chaosredis: WAIT %d: %v\n", w, err)
			os.Exit(2)
		}
		rep.Print(os.Stdout, cfg)
		reps = append(reps, rep)
		failed = failed || len(rep.Violations) > 0
	}
	printTable(ws, reps)
	if failed {
		os.Exit(1)
	}
}

// newStore makes the store of one run: ReplicasWait w, claims as in a
// service with several instances.
func newStore(w int) func(ctx context.Context, c *redis.ClusterClient) (store.Store, func(), error) {
	return func(ctx context.Context, c *redis.ClusterClient) (store.Store, func(), error) {
		s, err := redisstore.New(ctx, c, redisstore.Options{Prefix: "idem-chaos", DueClaim: time.Second, ReplicasWait: w})
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
}

// mayLose is what the package documentation says a failover may lose with
// ReplicasWait w: acknowledged writes without it; with it, only what a
// reader was shown before its writer's WAIT returned.
func mayLose(w int) ichaos.Loses {
	if w == 0 {
		return ichaos.LosesWrites
	}
	return ichaos.LosesReads
}

func parseWaits(v string) ([]int, error) {
	var ws []int
	for _, f := range strings.Split(v, ",") {
		w, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || w < 0 {
			return nil, fmt.Errorf("%q is not a number of replicas", f)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// printTable writes the figures of every run, in BENCHMARKS.md's form.
func printTable(ws []int, reps []*chaos.Report) {
	fmt.Println()
	fmt.Println("| WAIT | requests | failovers | acknowledged writes lost | double executions | keys stuck | violations |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for i, r := range reps {
		fmt.Printf("| %d | %d | %d | %d | %d | %d | %d |\n", ws[i], r.Requests, r.Failovers, r.LostWrites, r.DoubleExecutions, r.Stuck(), len(r.Violations))
	}
}
