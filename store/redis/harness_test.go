package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The tests' servers: one standalone redis-server and a cluster of three
// primaries with a replica each (replicated with Nagle's algorithm,
// repl-disable-tcp-nodelay, so that a replica lags as it may in a
// deployment), started from the redis-server on PATH on
// free loopback ports, each in a directory of its own under one temporary
// directory, the first time a test needs them, and killed (the directory
// removed) when the test binary ends (TestMain). A child process (the
// broken-driver proofs) is given the parent's servers (envServers) and
// neither starts nor stops any. The tests touch no other server: never the
// one on 6379, and they flush nothing.

// envServers passes the servers to a child process:
// "standalone=ADDR;cluster=ADDR,ADDR,...".
const envServers = "IDEM_REDIS_TEST_SERVERS"

type servers struct {
	standalone string
	cluster    []string // the primaries first, then their replicas
}

var harness struct {
	once  sync.Once
	srv   servers
	err   error
	dir   string
	procs []*proc
}

// proc is a running server.
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once it has exited
}

// spawn starts the server bin with args.
func spawn(bin string, args []string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// restart starts a killed server again, on its port, in its directory.
func (p *proc) restart() (*proc, error) {
	q, err := spawn(p.cmd.Path, p.cmd.Args[1:])
	if err != nil {
		return nil, err
	}
	return q, waitPing("127.0.0.1:"+p.cmd.Args[2], q)
}

func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
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
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return servers{}, fmt.Errorf("redis-server is not on PATH (apt-get install redis-server): the store/redis tests need it: %w", err)
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return servers{}, fmt.Errorf("redis-cli is not on PATH (apt-get install redis-tools): %w", err)
	}
	if harness.dir, err = os.MkdirTemp("", "idem-redis-test-"); err != nil {
		return servers{}, err
	}
	var srv servers
	addr, p, err := startServer(bin, filepath.Join(harness.dir, "standalone"))
	if err != nil {
		return srv, err
	}
	harness.procs = append(harness.procs, p)
	srv.standalone = addr
	var procs []*proc
	srv.cluster, procs, err = startCluster(bin, harness.dir, true)
	harness.procs = append(harness.procs, procs...)
	return srv, err
}

// startCluster starts six servers in directories under dir and joins them
// into three primaries with a replica each (replicated with Nagle's
// algorithm if nagle). It returns their addresses and their processes,
// also when it fails.
func startCluster(bin, dir string, nagle bool) ([]string, []*proc, error) {
	var addrs []string
	var procs []*proc
	for i := range 6 {
		addr, p, err := startServer(bin, filepath.Join(dir, "node"+strconv.Itoa(i)), "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
			"--repl-disable-tcp-nodelay", map[bool]string{true: "yes", false: "no"}[nagle],
			"--repl-diskless-sync-delay", "0") // a replica syncs at once, not 5 s later
		if err != nil {
			return addrs, procs, err
		}
		addrs, procs = append(addrs, addr), append(procs, p)
	}
	return addrs, procs, createCluster(addrs)
}

// extraServer starts a server of t's own in a directory of t's (extra are
// its settings, after the harness's), killed when t ends.
func extraServer(t testing.TB, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not on PATH (apt-get install redis-server): %v", err)
	}
	addr, p, err := startServer(bin, t.TempDir(), extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.kill)
	return addr
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

// startServer starts one redis-server that keeps nothing on disk and never
// evicts, on a free port whose cluster bus port (+10000) is free too.
func startServer(bin, dir string, extra ...string) (string, *proc, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	var last error
	for range 10 {
		port, err := freePort()
		if err != nil {
			return "", nil, err
		}
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--maxmemory-policy", "noeviction", "--dir", dir, "--logfile", "server.log", "--daemonize", "no"}, extra...)
		p, err := spawn(bin, args)
		if err != nil {
			return "", nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if last = waitPing(addr, p); last == nil {
			return addr, p, nil
		}
		p.kill()
	}
	return "", nil, fmt.Errorf("starting redis-server in %s: %w (see its server.log)", dir, last)
}

// freePort is a loopback port that was free, with its cluster bus port.
func freePort() (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err == nil {
			_ = bus.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free port pair")
}

func waitPing(addr string, p *proc) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-p.exited:
			return errors.New("redis-server exited")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// createCluster joins six servers into three primaries with a replica each
// and waits until every node says the cluster is ok and every replica is
// in sync.
func createCluster(addrs []string) error {
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	return waitClusterOK(addrs, 30*time.Second)
}

func waitClusterOK(addrs []string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		for {
			info, err := c.ClusterInfo(context.Background()).Result()
			repl, err2 := c.Info(context.Background(), "replication").Result()
			if err == nil && err2 == nil && infoField(info, "cluster_state") == "ok" && synced(repl) {
				break
			}
			if time.Now().After(deadline) {
				_ = c.Close()
				return fmt.Errorf("cluster node %s not ok within %v: %v %v\n%s", addr, within, err, err2, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.Close()
	}
	return nil
}

// synced reports whether an INFO replication reply is a primary's, or a
// replica's whose link is up and whose sync is done.
func synced(repl string) bool {
	if infoField(repl, "role") == "master" {
		return true
	}
	return infoField(repl, "master_link_status") == "up" && infoField(repl, "master_sync_in_progress") == "0"
}

func stopServers() {
	for _, p := range harness.procs {
		p.kill()
	}
	if harness.dir != "" {
		_ = os.RemoveAll(harness.dir)
	}
}
