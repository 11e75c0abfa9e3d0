package redisproc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Info is the INFO section of the server at addr ("" if it does not
// answer).
func Info(addr, section string) string {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	v, _ := c.Info(context.Background(), section).Result()
	return v
}

// clusterInfo is the CLUSTER INFO of the node at addr ("" if it does not
// answer).
func clusterInfo(addr string) string {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	v, _ := c.ClusterInfo(context.Background()).Result()
	return v
}

// Field is the value of name in an INFO reply ("" if it has none).
func Field(info, name string) string {
	_, rest, ok := strings.Cut("\n"+info, "\n"+name+":")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, "\n")
	return strings.TrimSpace(v)
}

// Synced reports whether an INFO replication reply is a primary's, or a
// replica's whose link is up and whose sync is done.
func Synced(repl string) bool {
	if Field(repl, "role") == "master" {
		return true
	}
	return Field(repl, "master_link_status") == "up" && Field(repl, "master_sync_in_progress") == "0"
}

// Role is node i's role, "master" or "slave" ("" if it does not answer).
func (c *Cluster) Role(i int) string {
	return Field(Info(c.Addrs[i], "replication"), "role")
}

// ReplicaOf is the index of the node that says it replicates node i, or -1.
func (c *Cluster) ReplicaOf(i int) int {
	_, port, _ := strings.Cut(c.Addrs[i], ":")
	for j := range c.Addrs {
		repl := Info(c.Addrs[j], "replication")
		if j != i && Field(repl, "role") == "slave" && Field(repl, "master_port") == port {
			return j
		}
	}
	return -1
}

// WaitOK waits until every running node says the cluster is ok and every
// running replica is in sync, for within at most.
func (c *Cluster) WaitOK(within time.Duration) error {
	deadline := time.Now().Add(within)
	for i, addr := range c.Addrs {
		for c.Up(i) {
			info, repl := clusterInfo(addr), Info(addr, "replication")
			if Field(info, "cluster_state") == "ok" && Synced(repl) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("redisproc: cluster node %s not ok within %v:\n%s\n%s", addr, within, info, repl)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// WaitAcked waits until the primary at node i has a replica online that
// has acknowledged everything the primary had sent when the wait began,
// for within at most: only then is the replica known to follow the
// primary's stream, and a WAIT 1 there to succeed. A replica that has
// just synced may say it is in sync, link up, well before (it is sent the
// stream after its first acknowledgement, up to a second later).
func (c *Cluster) WaitAcked(i int, within time.Duration) error {
	deadline := time.Now().Add(within)
	repl := Info(c.Addrs[i], "replication")
	want, err := strconv.ParseInt(Field(repl, "master_repl_offset"), 10, 64)
	if err != nil {
		return fmt.Errorf("redisproc: %s has no replication offset:\n%s", c.Addrs[i], repl)
	}
	for ; acked(Field(repl, "slave0")) < want; repl = Info(c.Addrs[i], "replication") {
		if time.Now().After(deadline) {
			return fmt.Errorf("redisproc: no replica of %s acknowledged offset %d within %v:\n%s", c.Addrs[i], want, within, repl)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// acked is the offset a replica's line of a primary's INFO replication
// ("ip=...,port=...,state=online,offset=N,lag=L") says it acknowledged,
// -1 if it is not online.
func acked(line string) int64 {
	var online bool
	var offset int64
	for _, kv := range strings.Split(line, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "state":
			online = v == "online"
		case "offset":
			offset, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if !online {
		return -1
	}
	return offset
}
