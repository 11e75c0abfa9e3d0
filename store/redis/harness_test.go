package redisstore

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/idemkit/idem/store/redis/internal/redisproc"
)

// The tests' servers: one standalone redis-server and a cluster of three
// primaries with a replica each (replicated with Nagle's algorithm,
// repl-disable-tcp-nodelay, so that a replica lags as it may in a
// deployment), started by package redisproc from the redis-server on PATH
// on free loopback ports, each in a directory of its own under one
// temporary directory, the first time a test needs them, and killed (the
// directory removed) when the test binary ends (TestMain). A child process
// (the broken-driver proofs) is given the parent's servers (envServers)
// and neither starts nor stops any. The tests touch no other server: never
// the one on 6379, and they flush nothing.

// envServers passes the servers to a child process:
// "standalone=ADDR;cluster=ADDR,ADDR,...".
const envServers = "IDEM_REDIS_TEST_SERVERS"

type servers struct {
	standalone string
	cluster    []string // the primaries first, then their replicas
}

var harness struct {
	once       sync.Once
	srv        servers
	err        error
	dir        string
	standalone *redisproc.Proc
	cluster    *redisproc.Cluster
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopServers()
	os.Exit(code)
}

// testServers returns the servers, started on first use.
func testServers(t testing.TB) servers {
	t.Helper()
	harness.once.Do(func() { harness.srv, harness.err = startServers() })
	if harness.err != nil {
		t.Fatalf("redis test servers: %v", harness.err)
	}
	return harness.srv
}

func startServers() (servers, error) {
	if v := os.Getenv(envServers); v != "" {
		return parseServers(v)
	}
	bin, err := redisproc.Bin()
	if err != nil {
		return servers{}, fmt.Errorf("the store/redis tests need it: %w", err)
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return servers{}, fmt.Errorf("redis-cli is not on PATH (apt-get install redis-tools): %w", err)
	}
	if harness.dir, err = os.MkdirTemp("", "idem-redis-test-"); err != nil {
		return servers{}, err
	}
	if harness.standalone, err = redisproc.StartServer(bin, filepath.Join(harness.dir, "standalone")); err != nil {
		return servers{}, err
	}
	srv := servers{standalone: harness.standalone.Addr}
	harness.cluster, err = redisproc.StartCluster(bin, harness.dir, redisproc.ClusterOptions{Nagle: true})
	srv.cluster = harness.cluster.Addrs
	return srv, err
}

// extraServer starts a server of t's own in a directory of t's (extra are
// its settings, after the harness's), killed when t ends.
func extraServer(t testing.TB, extra ...string) string {
	t.Helper()
	bin, err := redisproc.Bin()
	if err != nil {
		t.Fatal(err)
	}
	p, err := redisproc.StartServer(bin, t.TempDir(), extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p.Addr
}

func (s servers) String() string {
	return "standalone=" + s.standalone + ";cluster=" + strings.Join(s.cluster, ",")
}

func parseServers(v string) (servers, error) {
	var s servers
	for _, part := range strings.Split(v, ";") {
		name, value, _ := strings.Cut(part, "=")
		switch name {
		case "standalone":
			s.standalone = value
		case "cluster":
			s.cluster = strings.Split(value, ",")
		}
	}
	if s.standalone == "" || len(s.cluster) != 6 {
		return s, fmt.Errorf("%s=%q: want standalone=ADDR;cluster=six addresses", envServers, v)
	}
	return s, nil
}

func stopServers() {
	if harness.standalone != nil {
		harness.standalone.Kill()
	}
	if harness.cluster != nil {
		harness.cluster.Stop()
	}
	if harness.dir != "" {
		_ = os.RemoveAll(harness.dir)
	}
}
