package redisstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

var testFP = core.Fingerprint{1, 2, 3}

// reserved is a scope's record after a reserve through s.
func reserved(t *testing.T, s store.Store, sc core.Scope) core.Record {
	t.Helper()
	p := core.PolicyDefault()
	a, err := applyOver(context.Background(), s, &p, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
	if err != nil || a.Transition.Decision.Kind != core.DecisionExecute {
		t.Fatalf("reserve: %v, %v", a.Transition.Describe(), err)
	}
	return a.Record
}

// TestNewChecksEviction: a server that may evict keys is refused, with the
// policy it has and the one it needs; where CONFIG is disabled, New says
// so and names the option that skips the check; with SkipEvictionCheck
// either starts.
func TestNewChecksEviction(t *testing.T) {
	for _, tc := range []struct {
		settings []string
		want     []string // in New's error
	}{
		{[]string{"--maxmemory-policy", "allkeys-lru"}, []string{`"allkeys-lru"`, "noeviction"}},
		{[]string{"--rename-command", "CONFIG", "CONFIG-renamed-by-the-test"}, []string{"CONFIG GET", "SkipEvictionCheck"}},
	} {
		c := redis.NewClient(&redis.Options{Addr: extraServer(t, tc.settings...)})
		_, err := New(context.Background(), c, Options{})
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("New over %v: %v, want an error naming %s", tc.settings, err, w)
			}
		}
		s, err := New(context.Background(), c, Options{SkipEvictionCheck: true})
		if err != nil {
			t.Fatalf("New over %v with SkipEvictionCheck: %v", tc.settings, err)
		}
		s.Close()
		_ = c.Close()
	}
}

// TestNewRefusesBadInput: bad options and clients are errors, never panics.
func TestNewRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	c := standaloneClient(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": testServers(t).standalone}})
	defer ring.Close()
	for name, f := range map[string]func() error{
		"nil client":         func() error { _, err := New(ctx, nil, Options{}); return err },
		"nil *Client":        func() error { _, err := New(ctx, (*redis.Client)(nil), Options{}); return err },
		"nil *ClusterClient": func() error { _, err := New(ctx, (*redis.ClusterClient)(nil), Options{}); return err },
		"a ring":             func() error { _, err := New(ctx, ring, Options{}); return err },
		"a brace":            func() error { _, err := New(ctx, c, Options{Prefix: "a{b"}); return err },
		"a long prefix": func() error {
			_, err := New(ctx, c, Options{Prefix: strings.Repeat("p", PrefixBytesMax+1)})
			return err
		},
		"negative wait": func() error { _, err := New(ctx, c, Options{ReplicasWait: -1}); return err },
	} {
		if err := f(); err == nil {
			t.Errorf("New with %s: no error", name)
		}
	}
}

// TestOutOfMemory: at maxmemory under noeviction, a write that grows the
// data is store.ErrStoreFull and writes nothing, while a replay, a read
// for a sweep and a delete still work (the sweeper can free memory).
func TestOutOfMemory(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: extraServer(t, "--maxmemory", "4mb")})
	defer c.Close()
	s := newTestStore(t, c, Options{})
	p := core.PolicyDefault()
	done := reserved(t, s, testScope("oom-done"))
	a, err := applyOver(ctx, s, &p, done.Scope, core.Event{Kind: core.EventComplete, Token: done.Token, Response: core.Response{StatusCode: 200}})
	if err != nil {
		t.Fatal(err)
	}
	done = a.Record
	// Small records, so that the server is full to within one of them.
	body := make([]byte, 2<<10)
	var full error
	for i := 0; i < 10000 && full == nil; i++ {
		rec := done
		rec.Scope = testScope("oom-filler-" + strconv.Itoa(i))
		rec.Response.Body = body
		full = s.Insert(ctx, &rec)
	}
	if !errors.Is(full, store.ErrStoreFull) {
		t.Fatalf("filling the server: %v, want store.ErrStoreFull", full)
	}
	for i := 0; ; i++ {
		sc := testScope("oom-new-key-" + strconv.Itoa(i))
		_, err := applyOver(ctx, s, &p, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP})
		if err == nil && i < 100 {
			continue // it fitted
		}
		if !errors.Is(err, store.ErrStoreFull) {
			t.Fatalf("new keys when full: %v, want store.ErrStoreFull", err)
		}
		if n, _ := c.Exists(ctx, s.scoped(sc).keys[0]).Result(); n != 0 {
			t.Fatal("a reserve refused as full wrote its record")
		}
		break
	}
	if a, err := applyOver(ctx, s, &p, done.Scope, core.Event{Kind: core.EventReserve, Fingerprint: testFP}); err != nil || a.Transition.Decision.Kind != core.DecisionReplay {
		t.Fatalf("a replay when full: %v, %v", a.Transition.Describe(), err)
	}
	if a, err := applyOver(ctx, s, &p, done.Scope, core.Event{Kind: core.EventSweep}); err != nil || a.Transition.Decision.Kind != core.DecisionNothingDue {
		t.Fatalf("a sweep's read when full: %v, %v", a.Transition.Describe(), err)
	}
	if err := s.Delete(ctx, done.Scope, done.Version, done.Token); err != nil {
		t.Fatalf("a delete when full: %v", err)
	}
}

// TestWrongTypeIsRejected: a key of the wrong type where a record should
// be is a definite refusal (store.ErrRejected), not an outage, and the
// script wrote nothing (the token counter did not move).
func TestWrongTypeIsRejected(t *testing.T) {
	ctx := context.Background()
	c := standaloneClient(t)
	s := newTestStore(t, c, Options{})
	sc := testScope("wrong-type")
	o := s.scoped(sc)
	if err := c.RPush(ctx, o.keys[0], "not a hash").Err(); err != nil {
		t.Fatal(err)
	}
	before, _ := c.Get(ctx, s.l.tokens(o.b)).Result()
	_, err := s.Load(ctx, sc)
	if !errors.Is(err, store.ErrRejected) || errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("load over a list: %v, want store.ErrRejected (WRONGTYPE)", err)
	}
	if after, _ := c.Get(ctx, s.l.tokens(o.b)).Result(); after != before {
		t.Fatalf("the refused script moved the token counter from %q to %q", before, after)
	}
}

// TestScriptsReloaded: a server that forgot the scripts (SCRIPT FLUSH, a
// restart, a promoted replica) gets them again, and the call succeeds.
func TestScriptsReloaded(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: extraServer(t)})
	defer c.Close()
	s := newTestStore(t, c, Options{})
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	rec := reserved(t, s, testScope("flushed"))
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Due(ctx, store.DueSweep, 10); err != nil {
		t.Fatalf("due after SCRIPT FLUSH: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := s.Wait(wctx, rec.Scope, rec.Version, rec.Token); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait after SCRIPT FLUSH: %v", err)
	}
}

// TestNilInputIsAnError: no record, no policy: an error, never a panic.
func TestNilInputIsAnError(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, standaloneClient(t), Options{})
	p := core.PolicyDefault()
	ev := core.Event{Kind: core.EventReserve, Fingerprint: testFP}
	for name, err := range map[string]error{
		"insert":           s.Insert(ctx, nil),
		"compare-and-set":  s.CompareAndSet(ctx, nil, 1, 1),
		"apply-held":       s.ApplyHeld(ctx, nil, ev, &p, new(store.Applied)),
		"apply, no policy": s.Apply(ctx, testScope("nil"), ev, nil, new(store.Applied)),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	var a store.Applied
	if err := store.Apply(ctx, s, testScope("nil"), ev, nil, &a); !store.BadInput(err) {
		t.Errorf("a nil policy through store.Apply: %v, want the caller's bad input", err)
	}
}
