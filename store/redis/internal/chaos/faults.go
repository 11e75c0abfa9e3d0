package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/chaos"
	"github.com/idemkit/idem/store"
	"github.com/idemkit/idem/store/redis/internal/redisproc"
)

// run is the Redis part of one Run: a chaos.Target.
type run struct {
	cfg Config
	cl  *redisproc.Cluster
	s   store.Store
	rep *Report
}

var _ chaos.Target = (*run)(nil)

// Faults is the fault loop: for cfg.Faults, up to a second after the last
// one, a failover (failover) of a primary at random, or, half the time,
// of the primary whose replica has just rejoined: a second failure while
// its shard recovers, which the replica does not cover yet (one that has
// just synced is sent the stream after its first acknowledgement, up to a
// second later). With cfg.Settle, each failure waits until that replica
// follows the stream, and any primary may be next. Then it waits until every node is up, the cluster ok,
// and every primary has a replica that follows its stream (so that a store
// with ReplicasWait serves again). The seed fixes the loop's choices, not
// its timing.
func (r *run) Faults(ctx context.Context, crash func(kill func())) error {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, r.cfg.Seed^0x9e3779b97f4a7c15))
	recovering := -1 // the primary whose replica rejoined last
	for end := time.Now().Add(r.cfg.Faults); time.Now().Before(end); {
		time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
		victim := recovering
		if primaries := r.primaries(); victim < 0 || rng.IntN(2) == 0 {
			if len(primaries) == 0 {
				return fmt.Errorf("no primary answers")
			}
			victim = primaries[rng.IntN(len(primaries))]
		}
		var err error
		if recovering, err = r.failover(victim, rng, crash); err != nil {
			return err
		}
		if r.cfg.Settle {
			if err := r.cl.WaitAcked(recovering, 30*time.Second); err != nil {
				return err
			}
			recovering = -1
		}
	}
	if err := r.cl.WaitOK(30 * time.Second); err != nil {
		return err
	}
	for _, i := range r.primaries() {
		if err := r.cl.WaitAcked(i, 30*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// failover kills the primary i, waits until its replica has taken over,
// lets the new primary serve alone for up to half a second (with
// ReplicasWait, every call it serves is then ambiguous), and starts i
// again, waiting until it says it is a replica in sync, as an operator's
// monitoring sees it; it returns the new primary. It restarts the node
// only once the failover is done: a primary restarted empty before would
// serve its slots again, without the data.
func (r *run) failover(i int, rng *rand.Rand, crash func(kill func())) (int, error) {
	j := r.cl.ReplicaOf(i)
	if j < 0 {
		return -1, fmt.Errorf("the primary %s has no replica", r.cl.Addrs[i])
	}
	crash(func() { r.cl.Kill(i) })
	r.rep.Kills++
	if err := waitFor(30*time.Second, func() bool { return r.cl.Role(j) == "master" }); err != nil {
		return -1, fmt.Errorf("the replica %s of the killed %s did not take over: %w", r.cl.Addrs[j], r.cl.Addrs[i], err)
	}
	r.rep.Failovers++
	time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
	if err := r.cl.Restart(i); err != nil {
		return -1, err
	}
	if err := waitFor(30*time.Second, func() bool {
		repl := redisproc.Info(r.cl.Addrs[i], "replication")
		return redisproc.Field(repl, "role") == "slave" && redisproc.Synced(repl)
	}); err != nil {
		return -1, fmt.Errorf("the restarted %s did not sync as a replica: %w", r.cl.Addrs[i], err)
	}
	r.rep.Restarts++
	return j, nil
}

// primaries are the nodes running as primaries.
func (r *run) primaries() []int {
	var out []int
	for i := range r.cl.Addrs {
		if r.cl.Up(i) && r.cl.Role(i) == "master" {
			out = append(out, i)
		}
	}
	return out
}

// Open counts the records left in progress and unknown, loading each key
// (the store lists nothing).
func (r *run) Open(ctx context.Context, keys []core.Scope) (inProgress, unknown int, err error) {
	return chaos.CountOpen(ctx, r.s, keys)
}

// waitFor waits until ok says yes, for d at most.
func waitFor(d time.Duration, ok func() bool) error {
	for deadline := time.Now().Add(d); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", d)
		}
	}
	return nil
}
