package redisstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/store"
	"github.com/idemkit/idem/store/redis/internal/redisproc"
	"github.com/idemkit/idem/store/storetest"
)

// TestConformanceSentinel runs the suite through Sentinel's failover
// client: a primary, its replica and one sentinel of the test's own.
func TestConformanceSentinel(t *testing.T) {
	primary := extraServer(t)
	extraServer(t, "--replicaof", "127.0.0.1", strings.TrimPrefix(primary, "127.0.0.1:"))
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "idem", SentinelAddrs: []string{sentinel(t, primary)}})
	defer c.Close()
	storetest.RunStoreSuite(t,
		func(t *testing.T) store.Store {
			return newTestStore(t, c, Options{PollInterval: 50 * time.Millisecond})
		},
		storetest.WithRealLease(300*time.Millisecond),
		storetest.WithHistories(1),
	)
}

// sentinel starts a sentinel that monitors primary as "idem", killed when t
// ends, and returns its address once it knows the primary.
func sentinel(t *testing.T, primary string) string {
	t.Helper()
	bin, err := redisproc.Bin()
	if err != nil {
		t.Fatal(err)
	}
	port, err := redisproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf") // a sentinel rewrites its configuration
	host, pport, _ := strings.Cut(primary, ":")
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor idem %s %s 1\nsentinel down-after-milliseconds idem 1000\n", port, dir, host, pport)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := redisproc.Spawn(bin, []string{conf, "--sentinel"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer sc.Close()
	waitFor(t, 10*time.Second, "the sentinel to know the primary", func() bool {
		got, err := sc.GetMasterAddrByName(context.Background(), "idem").Result()
		return err == nil && len(got) == 2 && got[0]+":"+got[1] == primary
	})
	return addr
}
