// Package redisserver starts a redis-server of a test's own, for the tests
// outside store/redis that need one (the payments example, simrun): on a
// free loopback port, nothing on disk, no eviction, killed at the test's
// end. They touch no other server.
package redisserver

import (
	"net"
	"os/exec"
	"testing"
	"time"
)

// Start starts the server and returns its address.
func Start(t testing.TB) string {
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

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
