package redisproc

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// ClusterOptions shape a cluster.
type ClusterOptions struct {
	// Nagle makes the primaries send to their replicas with Nagle's
	// algorithm (repl-disable-tcp-nodelay yes), so that a replica lags by
	// up to 40 ms after a burst of writes, as it may in a deployment;
	// without it they send at once (Redis's default).
	Nagle bool
	// NodeTimeout is cluster-node-timeout: how long a primary may be
	// unreachable before its replica takes over. 1 s if zero.
	NodeTimeout time.Duration
}

// Cluster is three primaries with a replica each, each node a server of
// its own in a directory of its own.
type Cluster struct {
	// Addrs are the nodes' addresses: the primaries first, then their
	// replicas, as created. A failover swaps roles, never addresses.
	Addrs []string
	mu    sync.Mutex
	procs []*Proc // by Addrs' index: the last process started
	down  []bool  // by Addrs' index: killed and not restarted
}

// StartCluster starts six servers in directories under dir, joins them
// into three primaries with a replica each and waits until every node says
// the cluster is ok and every replica is in sync. It returns the cluster
// also when it fails, for Stop.
func StartCluster(bin, dir string, o ClusterOptions) (*Cluster, error) {
	if o.NodeTimeout == 0 {
		o.NodeTimeout = time.Second
	}
	c := &Cluster{}
	for i := range 6 {
		p, err := StartServer(bin, filepath.Join(dir, "node"+strconv.Itoa(i)), "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", strconv.FormatInt(o.NodeTimeout.Milliseconds(), 10),
			"--repl-disable-tcp-nodelay", map[bool]string{true: "yes", false: "no"}[o.Nagle],
			"--repl-diskless-sync-delay", "0") // a replica syncs at once, not 5 s later
		if err != nil {
			return c, err
		}
		c.Addrs, c.procs, c.down = append(c.Addrs, p.Addr), append(c.procs, p), append(c.down, false)
	}
	args := append(append([]string{"--cluster", "create"}, c.Addrs...), "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		return c, fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	return c, c.WaitOK(30 * time.Second)
}

// Stop kills every node.
func (c *Cluster) Stop() {
	for i := range c.Addrs {
		c.Kill(i)
	}
}

// Kill kills node i with SIGKILL: it loses every write it has not sent to
// its replica (nothing is on disk). A node already down stays down.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	p, down := c.procs[i], c.down[i]
	c.down[i] = true
	c.mu.Unlock()
	if !down {
		p.Kill()
	}
}

// Up reports whether node i is running (it was not killed, or it was
// restarted since).
func (c *Cluster) Up(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.down[i]
}

// Restart starts the killed node i again, empty, on its port and with its
// cluster configuration (nodes.conf): once the cluster has told it that
// its replica took over, it syncs as that replica's replica. (Started
// before that, it would serve its slots again, empty: wait for the
// failover first.)
func (c *Cluster) Restart(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.down[i] {
		return fmt.Errorf("redisproc: Restart: node %s is running", c.Addrs[i])
	}
	p, err := c.procs[i].Restart()
	if err != nil {
		return err
	}
	c.procs[i], c.down[i] = p, false
	return nil
}
