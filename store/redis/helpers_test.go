package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// runID starts every key prefix of this test binary's stores, so that no
// two runs (nor a run and a service) share a key.
var runID = func() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

var storeSeq atomic.Int64

// standaloneClient is a client of the standalone test server, closed when
// t ends.
func standaloneClient(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: testServers(t).standalone})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clusterClient is a client of the test cluster, closed when t ends.
func clusterClient(t testing.TB) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testServers(t).cluster})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newTestStore is a Store over c under a prefix of its own, closed when t
// ends.
func newTestStore(t testing.TB, c redis.UniversalClient, o Options) *Store {
	t.Helper()
	o.Prefix = "idemtest-" + runID + "-" + strconv.FormatInt(storeSeq.Add(1), 10)
	s, err := New(context.Background(), c, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// applyOver is store.Apply with an Applied of its own.
func applyOver(ctx context.Context, s store.Store, p *core.Policy, sc core.Scope, ev core.Event) (store.Applied, error) {
	var a store.Applied
	err := store.Apply(ctx, s, sc, ev, p, &a)
	return a, err
}

func testScope(key string) core.Scope {
	return core.Scope{Tenant: "t", Principal: "p", UseCase: "redis.test", Key: key + "-0123456789abcdef"}
}
