// Package redisproc runs redis-server processes for store/redis's tests and
// chaos harness: one server, or a cluster of three primaries with a
// replica each, started from the redis-server on PATH on free loopback
// ports, each in a directory of its own, keeping nothing on disk and never
// evicting. It kills (SIGKILL) and restarts what it started, and touches
// no other server.
package redisproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Proc is a server this package started.
type Proc struct {
	// Addr is where it listens ("" for one started by Spawn, whose
	// arguments are the caller's).
	Addr   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once it has exited
}

// Spawn starts bin with args, tied to this process's life where the system
// allows it (Linux), so that a binary killed by its timeout leaves no
// server behind.
func Spawn(bin string, args []string) (*Proc, error) {
	cmd := exec.Command(bin, args...)
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// Kill kills the server with SIGKILL (it has no time to do anything more)
// and waits until it has exited.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Restart starts a killed server of StartServer's again, with the same
// arguments (its port, its directory), and waits until it answers.
func (p *Proc) Restart() (*Proc, error) {
	if p.Addr == "" {
		return nil, errors.New("redisproc: Restart: a server started by Spawn has no known address")
	}
	q, err := Spawn(p.cmd.Path, p.cmd.Args[1:])
	if err != nil {
		return nil, err
	}
	q.Addr = p.Addr
	if err := waitPing(q); err != nil {
		q.Kill()
		return nil, err
	}
	return q, nil
}

// Bin is the redis-server on PATH, or an error that says how to install it.
func Bin() (string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("redis-server is not on PATH (apt-get install redis-server): %w", err)
	}
	return bin, nil
}

// StartServer starts one redis-server in dir (created if need be) that
// keeps nothing on disk and never evicts, on a free port whose cluster bus
// port (+10000) is free too; extra are its settings, after these.
func StartServer(bin, dir string, extra ...string) (*Proc, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var last error
	for range 10 { // another process may take the port in between
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--maxmemory-policy", "noeviction", "--dir", dir, "--logfile", "server.log", "--daemonize", "no"}, extra...)
		p, err := Spawn(bin, args)
		if err != nil {
			return nil, err
		}
		p.Addr = "127.0.0.1:" + strconv.Itoa(port)
		if last = waitPing(p); last == nil {
			return p, nil
		}
		p.Kill()
	}
	return nil, fmt.Errorf("starting redis-server in %s: %w (see its server.log)", dir, last)
}

// FreePort is a loopback port that was free, with its cluster bus port.
func FreePort() (int, error) {
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
	return 0, errors.New("redisproc: no free port pair")
}

// waitPing waits until p answers at its address, for 10 seconds at most,
// or until it has exited.
func waitPing(p *Proc) error {
	c := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
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
