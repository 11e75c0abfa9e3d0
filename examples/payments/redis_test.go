package main

import (
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// redisServer starts a redis-server of the test's own on a free loopback
// port (nothing on disk, no eviction) and stops it at the test's end.
func redisServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed: %v", err)
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--maxmemory-policy", "noeviction", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s did not start", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPaymentsOnRedis: -store redis charges once, replays byte for byte,
// and a service started again on the same server replays what the first
// one stored.
func TestPaymentsOnRedis(t *testing.T) {
	addr := redisServer(t)
	body := `{"customerId":"c-1","amountCents":1250,"currency":"EUR"}`
	first := startService(t, options{storeKind: "redis", redisAddrs: addr})
	a := first.pay("alice", key, body)
	if a.status != http.StatusCreated {
		t.Fatalf("first: %d %s", a.status, a.body)
	}
	first.stop()
	<-first.done
	first.done <- nil
	second := startService(t, options{storeKind: "redis", redisAddrs: addr})
	b := second.pay("alice", key, body)
	if b.status != a.status || b.body != a.body || b.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after a restart: %d %s %v, want the first answer replayed", b.status, b.body, b.header)
	}
	if r := second.pay("alice", key, strings.Replace(body, "1250", strconv.Itoa(9), 1)); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("another amount: %d", r.status)
	}
	if _, _, err := openRedis(t.Context(), ""); err == nil {
		t.Fatal("-store redis without -redis was accepted")
	}
}
