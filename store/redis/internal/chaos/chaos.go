// Package chaos is store/redis's chaos harness (make chaos-redis, command
// chaosredis): a cluster of its own, three primaries with a replica each
// on loopback (package redisproc), whose primaries a fault loop kills
// (SIGKILL, nothing on disk), waits until their replicas have taken over,
// and starts again, empty, to rejoin as the new primaries' replicas, while
// internal/chaos's clients send payments through the executor; then
// convergence and the invariants, and the figures of what the cluster
// lost. It takes the store as a factory, so that a test can hand it a
// driver with a planted bug and see it caught.
package chaos

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/internal/chaos"
	"github.com/idemkit/idem/store"
	"github.com/idemkit/idem/store/redis/internal/redisproc"
)

// Config is one run.
type Config struct {
	Clients int           // concurrent clients, each retrying
	Keys    int           // distinct keys the clients share at a time
	Slide   int           // how many answers move them on by one key (internal/chaos's Config)
	Backoff time.Duration // how long a client waits after an error
	Faults  time.Duration // how long the fault loop runs
	Seed    uint64
	// Wait is the store's ReplicasWait: NewStore's to set, the report's to
	// show.
	Wait int
	// MayLose is what a killed primary may lose, as the package
	// documentation says of this Wait: that loss, and what follows from it
	// on its keys, is measured, not a violation (see internal/chaos).
	MayLose chaos.Loses
	// Settle makes every failure wait until the shard before has recovered
	// (its rejoined replica follows the stream): independent failures only,
	// never a second one while a shard recovers.
	Settle bool
	// NodeTimeout is the cluster's cluster-node-timeout (1 s if zero).
	NodeTimeout time.Duration
	// NewStore makes the store over the cluster's client, with Wait.
	NewStore func(ctx context.Context, c *redis.ClusterClient) (store.Store, func(), error)
}

// Report is what the run found (internal/chaos's report) and the faults
// it injected.
type Report struct {
	chaos.Report
	Kills     int // primaries killed
	Failovers int // replicas that took over from a killed primary
	Restarts  int // killed primaries started again, that rejoined as replicas
}

// Run starts the cluster in a temporary directory, runs cfg over it, and
// stops it; it returns the report (and an error if it could not run).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Faults < 0 || cfg.NodeTimeout < 0 || cfg.NewStore == nil {
		return nil, fmt.Errorf("chaosredis: faults %v and node timeout %v must not be negative, and NewStore set", cfg.Faults, cfg.NodeTimeout)
	}
	bin, err := redisproc.Bin()
	if err != nil {
		return nil, err
	}
	// go-redis logs every dial that fails while a primary is down, and the
	// run kills primaries on purpose. (Its logger is global: Run is for
	// the harness's command and tests only.)
	redis.SetLogger(quiet{})
	dir, err := os.MkdirTemp("", "idem-chaos-redis-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cl, err := redisproc.StartCluster(bin, dir, redisproc.ClusterOptions{NodeTimeout: cfg.NodeTimeout})
	defer cl.Stop()
	if err != nil {
		return nil, err
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs, PoolSize: cfg.Clients + 8})
	defer c.Close()
	s, closeStore, err := cfg.NewStore(ctx, c)
	if err != nil {
		return nil, err
	}
	defer closeStore()
	r := &run{cfg: cfg, cl: cl, s: s, rep: &Report{}}
	rep, err := chaos.Run(ctx, chaos.Config{Name: "chaosredis", Clients: cfg.Clients, Keys: cfg.Keys, Seed: cfg.Seed,
		Slide: cfg.Slide, Backoff: cfg.Backoff, MayLose: cfg.MayLose}, s, r)
	if err != nil {
		return nil, err
	}
	r.rep.Report = *rep
	return r.rep, nil
}

// quiet is a go-redis logger that drops what it is told.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// Print writes the summary in simrun's style.
func (r *Report) Print(w io.Writer, cfg Config) {
	r.Report.Print(w,
		fmt.Sprintf("chaosredis: seed %d, WAIT %d, %d clients, %d keys at a time (one more every %d answers: %d in all), faults for %v (settle: %v; a crash may lose: %v)",
			cfg.Seed, cfg.Wait, cfg.Clients, cfg.Keys, cfg.Slide, r.KeysUsed, cfg.Faults, cfg.Settle, cfg.MayLose),
		fmt.Sprintf("faults: %d primaries killed (SIGKILL), %d failovers, %d restarted as replicas", r.Kills, r.Failovers, r.Restarts))
}
