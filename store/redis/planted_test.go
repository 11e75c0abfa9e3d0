package redisstore

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// The planted drivers: the driver with one bug each, for
// TestSuiteCatchesPlantedDrivers.

// plantScript makes the replacements (old, new, old, new...) in s's write
// script, as a bug would; the server loads the changed script at its
// first call (NOSCRIPT).
func plantScript(t *testing.T, s *Store, replacements ...string) {
	t.Helper()
	src := s.scripts.write.src
	for i := 0; i+1 < len(replacements); i += 2 {
		if !strings.Contains(src, replacements[i]) {
			t.Fatalf("the write script has no %q to plant a bug in", replacements[i])
		}
		src = strings.Replace(src, replacements[i], replacements[i+1], 1)
	}
	s.scripts.write = newScript("write", src)
}

// tokenCheckSkipped: the script's precondition compares the version only,
// so a writer whose attempt was fenced off (same version, another token)
// overwrites the new attempt's record.
func tokenCheckSkipped(t *testing.T, s *Store) store.Store {
	plantScript(t, s, " and field('t') == ARGV[6]", "")
	return s
}

// counterResetByDelete: a delete drops the bucket's token counter with the
// record (tidying up), and the counter has no clock under it (which would
// hide the reset), so the next tokens start again from 1.
func counterResetByDelete(t *testing.T, s *Store) store.Store {
	plantScript(t, s,
		"local c = math.max(last + 1, sec * 1000000 + usec)", "local c = last + 1",
		"redis.call('DEL', KEYS[1])\n  changed()", "redis.call('DEL', KEYS[1], KEYS[2])\n  changed()")
	return s
}

// replicaReads is the driver with loads served by a replica (to take reads
// off the primaries), through a cluster client that may read replicas
// (ReadOnly, RouteRandomly): the record a load returns may be one the
// primary has already replaced. Its Applier is hidden, so that every event
// goes through its Load.
type replicaReads struct {
	store.Store
	s       *Store
	replica *redis.ClusterClient
}

func newReplicaReads(t *testing.T, s *Store) store.Store {
	replica := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testServers(t).cluster, ReadOnly: true, RouteRandomly: true})
	t.Cleanup(func() { _ = replica.Close() })
	return replicaReads{Store: store.HideApplier(s), s: s, replica: replica}
}

// Load takes the time and a fresh token from the primary (a replica cannot
// count), and the record from a replica.
func (r replicaReads) Load(ctx context.Context, sc core.Scope) (store.Snapshot, error) {
	snap, err := r.s.Load(ctx, sc)
	if err != nil {
		return snap, err
	}
	key := r.s.scoped(sc).keys[0]
	node, err := r.replica.SlaveForKey(ctx, key)
	if err != nil {
		return snap, err
	}
	m, err := node.HGetAll(ctx, key).Result()
	if err != nil {
		return snap, err
	}
	flat := make([]any, 0, 2*len(m))
	for k, v := range m {
		flat = append(flat, k, v)
	}
	snap.Record, err = decodeRecord(sc, flat, true)
	return snap, err
}

// auditLostOnDelete: the script deletes the record an operator evicts
// without pushing its audit entry, so the trail misses the evict.
func auditLostOnDelete(t *testing.T, s *Store) store.Store {
	plantScript(t, s, "  audit()\n  redis.call('DEL', KEYS[1])", "  redis.call('DEL', KEYS[1])")
	return s
}
