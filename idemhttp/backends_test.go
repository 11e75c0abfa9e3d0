package idemhttp_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
	pgxstore "github.com/idemkit/idem/store/pgx"
)

// backend is a store the end-to-end suite runs over: open returns a fresh
// one for one test, and a switch that takes it down (every call fails)
// and brings it back.
type backend struct {
	name string
	open func(t *testing.T) (s store.Store, setDown func(down bool))
}

// backends are the stores every end-to-end case runs over.
var backends = []backend{
	{"mem", openMem},
	{"pg", openPG},
}

var errStoreDown = errors.New("store down (test)")

// faultyStore fails every call while down is set. The memory store has no
// network to lose, so its outage is this wrapper (store.Wrap), fast path
// (Apply) included.
type faultyStore struct {
	store.Store
	down *atomic.Bool
}

func (s faultyStore) Load(ctx context.Context, sc core.Scope) (store.Snapshot, error) {
	if s.down.Load() {
		return store.Snapshot{}, errStoreDown
	}
	return s.Store.Load(ctx, sc)
}

func (s faultyStore) Insert(ctx context.Context, rec *core.Record) error {
	if s.down.Load() {
		return errStoreDown
	}
	return s.Store.Insert(ctx, rec)
}

func (s faultyStore) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, tok core.Token) error {
	if s.down.Load() {
		return errStoreDown
	}
	return s.Store.CompareAndSet(ctx, rec, v, tok)
}

func (s faultyStore) Delete(ctx context.Context, sc core.Scope, v uint64, tok core.Token) error {
	if s.down.Load() {
		return errStoreDown
	}
	return s.Store.Delete(ctx, sc, v, tok)
}

func (s faultyStore) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	if s.down.Load() {
		return nil, errStoreDown
	}
	return s.Store.Due(ctx, kind, limit)
}

func (s faultyStore) Wait(ctx context.Context, sc core.Scope, v uint64, tok core.Token) error {
	if s.down.Load() {
		return errStoreDown
	}
	return s.Store.Wait(ctx, sc, v, tok)
}

func openMem(*testing.T) (store.Store, func(bool)) {
	mem := memstore.New(memstore.Options{})
	down := new(atomic.Bool)
	s := store.Wrap(store.Layer{Outer: faultyStore{mem, down}, Inner: mem, Apply: func(next store.ApplyFunc) store.ApplyFunc {
		return func(ctx context.Context, sc core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
			if down.Load() {
				return errStoreDown
			}
			return next(ctx, sc, ev, p, out)
		}
	}})
	return s, down.Store
}

// pgDSN is the test server (IDEM_PG_DSN).
func pgDSN() string {
	if v := os.Getenv("IDEM_PG_DSN"); v != "" {
		return v
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

var pgMissing sync.Once

// openPG returns the PostgreSQL store in a schema of its own for t, dropped
// at the end. The pool reaches the server through a TCP relay (tcpRelay):
// taking the store down stops the relay, so the database is unreachable
// as when its host goes away, and the driver's own errors are what the
// executor sees. Without a server the test skips with one loud line,
// except under CI=true, where it fails (as store/pgx's tests do).
func openPG(t *testing.T) (store.Store, func(bool)) {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgDSN())
	if err != nil {
		t.Fatalf("IDEM_PG_DSN: %v", err)
	}
	admin, err := pgxpool.NewWithConfig(ctx, cfg.Copy())
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		if admin != nil {
			admin.Close()
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL at %s: %v (CI=true: the idemhttp PostgreSQL suite must run)", pgDSN(), err)
		}
		pgMissing.Do(func() {
			fmt.Fprintf(os.Stderr, "!!! idemhttp: no PostgreSQL at %s (%v): SKIPPING the end-to-end suite over store/pgx (set IDEM_PG_DSN)\n", pgDSN(), err)
		})
		t.SkipNow()
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "idemhttp_e2e_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		_, err := admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		admin.Close()
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})

	network, target := "tcp", net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	if strings.HasPrefix(cfg.ConnConfig.Host, "/") { // a Unix socket directory
		network, target = "unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port)
	}
	relay := newTCPRelay(t, network, target)
	host, port, _ := net.SplitHostPort(relay.addr)
	p, _ := strconv.Atoi(port)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Fallbacks = host, uint16(p), nil
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := pgxstore.Options{Schema: schema}
	if err := pgxstore.Migrate(ctx, pool, o); err != nil {
		pool.Close()
		t.Fatal(err)
	}
	s, err := pgxstore.New(ctx, pool, o)
	if err != nil {
		pool.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); pool.Close() }) // before the relay's cleanup (last in, first out)
	return s, relay.setDown
}

// tcpRelay forwards connections from a port on 127.0.0.1 to target. Down,
// it closes its listener (a connection attempt is refused) and every
// connection it relays: nothing more reaches the server, as when the
// server's host goes away. Up, it listens on the same port again.
type tcpRelay struct {
	t               *testing.T
	network, target string
	addr            string

	mu    sync.Mutex
	ln    net.Listener // nil while down
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newTCPRelay(t *testing.T, network, target string) *tcpRelay {
	r := &tcpRelay{t: t, network: network, target: target, addr: "127.0.0.1:0", conns: map[net.Conn]struct{}{}}
	r.setDown(false)
	t.Cleanup(func() {
		r.setDown(true)
		r.wg.Wait()
	})
	return r
}

func (r *tcpRelay) setDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case down && r.ln != nil:
		r.ln.Close()
		r.ln = nil
		for c := range r.conns {
			c.Close()
		}
		clear(r.conns)
	case !down && r.ln == nil:
		ln, err := net.Listen("tcp", r.addr)
		if err != nil {
			r.t.Fatalf("relay to PostgreSQL: listen again on %s: %v", r.addr, err)
		}
		r.ln, r.addr = ln, ln.Addr().String()
		r.wg.Add(1)
		go r.accept(ln)
	}
}

func (r *tcpRelay) accept(ln net.Listener) {
	defer r.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed: down
		}
		r.wg.Add(1)
		go r.relay(c)
	}
}

// relay copies both ways until either side ends, then closes both.
func (r *tcpRelay) relay(client net.Conn) {
	defer r.wg.Done()
	server, err := net.Dial(r.network, r.target)
	if err != nil {
		client.Close()
		return
	}
	r.mu.Lock()
	if r.ln == nil { // went down while dialling
		r.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	r.conns[client], r.conns[server] = struct{}{}, struct{}{}
	r.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(server, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, server); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	<-done
	r.mu.Lock()
	delete(r.conns, client)
	delete(r.conns, server)
	r.mu.Unlock()
}
