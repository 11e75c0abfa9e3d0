package redisstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	"github.com/idemkit/idem/store/redis/internal/redisproc"
)

// TestFailover kills a primary of a cluster of its own (SIGKILL) while its
// replica has every write (ReplicasWait 1), and checks what the store
// answers: while the replica takes over, outages only (ErrNotApplied or
// ErrAmbiguous: never a success, a failed precondition or a refusal);
// once it has, every outcome completed before is replayed byte for byte,
// every fresh token is above every token handed out before, and new keys
// execute, on the promoted replica too.
func TestFailover(t *testing.T) {
	ctx := context.Background()
	bin, err := redisproc.Bin()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := redisproc.StartCluster(bin, t.TempDir(), redisproc.ClusterOptions{})
	t.Cleanup(cl.Stop)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs, ReadTimeout: 2 * time.Second})
	defer c.Close()
	s := newTestStore(t, c, Options{ReplicasWait: 1, ReplicasWaitTimeout: 500 * time.Millisecond})
	done, handed := completeKeys(t, s, 64)
	victim, err := c.MasterForKey(ctx, s.scoped(done[0].Scope).keys[0])
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(cl.Addrs, victim.Options().Addr)
	if i < 0 {
		t.Fatalf("the primary %s is not one of the cluster's %v", victim.Options().Addr, cl.Addrs)
	}
	replica := cl.ReplicaOf(i)
	if replica < 0 {
		t.Fatalf("no replica of %s in %v", cl.Addrs[i], cl.Addrs)
	}
	cl.Kill(i)
	outages := ridesOut(t, s, done[0], 30*time.Second, func() bool { return cl.Role(replica) == "master" })
	// The promoted replica has no replica of its own, and every call
	// waits for one (ReplicasWait): they are ambiguous until the killed
	// primary, started again, has joined as its replica.
	rejoin(t, cl, i, replica, s.l.bucket[s.scoped(done[0].Scope).b]+"probe")
	outages += ridesOut(t, s, done[0], 30*time.Second, nil)
	t.Logf("killed the primary %s: %d calls failed as outages until its replica %s took over and had a replica again", cl.Addrs[i], outages, cl.Addrs[replica])
	p := core.PolicyDefault()
	for _, rec := range done {
		a, err := applyOver(ctx, s, &p, rec.Scope, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
		if err != nil || a.Transition.Decision.Kind != core.DecisionReplay || !a.Record.Response.Equal(rec.Response) {
			t.Fatalf("%s after the failover: %s, %v; want its outcome replayed", rec.Scope, a.Transition.Describe(), err)
		}
		snap, err := s.Load(ctx, rec.Scope)
		if err != nil || snap.FreshToken <= handed {
			t.Fatalf("%s after the failover: fresh token %d, %v; want one above %d", rec.Scope, snap.FreshToken, err, handed)
		}
	}
	completeKeys(t, s, 32) // new keys, on every primary
}

// rejoin starts the killed primary (node i of cl) again and waits until it
// is the replica of the promoted one (node promoted) and acknowledges
// writes; probe is a key of the promoted primary's the test may write.
func rejoin(t *testing.T, cl *redisproc.Cluster, i, promoted int, probe string) {
	if err := cl.Restart(i); err != nil {
		t.Fatal(err)
	}
	// Started again, it says it is the primary of its slots until the
	// cluster tells it otherwise; then it syncs as the new primary's replica.
	waitFor(t, 30*time.Second, "the killed primary to be a replica in sync", func() bool {
		repl := redisproc.Info(cl.Addrs[i], "replication")
		return redisproc.Field(repl, "role") == "slave" && redisproc.Synced(repl)
	})
	// A replica that has just synced acknowledges its first write up to a
	// second later (its periodic REPLCONF ACK): until then every call is
	// ambiguous, which ridesOut accepts; a probe waits that second out.
	waitFor(t, 30*time.Second, "the promoted replica's first acknowledged write", func() bool {
		c := redis.NewClient(&redis.Options{Addr: cl.Addrs[promoted], ReadTimeout: -1})
		defer c.Close()
		pipe := c.Pipeline()
		pipe.Set(context.Background(), probe, "1", 0)
		acks := pipe.Do(context.Background(), "WAIT", 1, 3000)
		_, _ = pipe.Exec(context.Background())
		return acks.Val() == int64(1)
	})
}

// completeKeys reserves and completes n new keys through s and returns
// their records, and the largest token handed out.
func completeKeys(t *testing.T, s *Store, n int) ([]core.Record, core.Token) {
	ctx := context.Background()
	p := core.PolicyDefault()
	var recs []core.Record
	var handed core.Token
	for i := range n {
		sc := testScope("failover-" + strconv.Itoa(int(storeSeq.Add(1))) + "-" + strconv.Itoa(i))
		rec := reserved(t, s, sc)
		resp := core.Response{StatusCode: 201, Body: []byte("payment " + strconv.Itoa(i))}
		var a store.Applied
		if err := store.ApplyHeld(ctx, s, &rec, core.Event{Kind: core.EventComplete, Token: rec.Token, Response: resp}, &p, &a); err != nil {
			t.Fatalf("complete %s: %v", sc, err)
		}
		snap, err := s.Load(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		recs, handed = append(recs, a.Record), max(handed, snap.FreshToken)
	}
	return recs, handed
}

// ridesOut replays rec until it succeeds (or, with until, until it says
// so), within d, and returns how many calls failed before; each must have
// failed as an outage.
func ridesOut(t *testing.T, s *Store, rec core.Record, d time.Duration, until func() bool) int {
	p := core.PolicyDefault()
	deadline := time.Now().Add(d)
	for outages := 0; ; outages++ {
		a, err := applyOver(context.Background(), s, &p, rec.Scope, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
		switch {
		case err == nil && a.Transition.Decision.Kind == core.DecisionReplay && a.Record.Response.Equal(rec.Response):
			if until == nil {
				return outages
			}
		case err == nil:
			t.Fatalf("during the failover: %s, want a replay or an outage", a.Transition.Describe())
		case !errors.Is(err, ErrNotApplied) && !errors.Is(err, ErrAmbiguous):
			t.Fatalf("during the failover: %v, want ErrNotApplied or ErrAmbiguous", err)
		}
		if until != nil && until() {
			return outages
		}
		if time.Now().After(deadline) {
			t.Fatalf("not over within %v of the kill: %v", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor fails t unless ok says yes within d.
func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
	}
}
