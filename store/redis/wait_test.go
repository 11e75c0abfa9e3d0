package redisstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/core"
)

// sameBucket is a scope other than sc in sc's bucket.
func sameBucket(s *Store, sc core.Scope) core.Scope {
	b := s.scoped(sc).b
	for i := 0; ; i++ {
		other := testScope("neighbour-" + strconv.Itoa(i))
		if s.scoped(other).b == b {
			return other
		}
	}
}

// TestWaitWokenByPubSub: a waiter is woken by the write of its record
// through another Store (another instance) long before its poll (10 s),
// and not by the write of another record of its bucket; on one server
// and on the cluster.
func TestWaitWokenByPubSub(t *testing.T) {
	for name, c := range map[string]redis.UniversalClient{"standalone": standaloneClient(t), "cluster": clusterClient(t)} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			waiter := newTestStore(t, c, Options{PollInterval: 10 * time.Second})
			writer, err := New(ctx, c, Options{Prefix: waiter.opt.Prefix})
			if err != nil {
				t.Fatal(err)
			}
			defer writer.Close()
			rec := reserved(t, writer, testScope("pubsub-"+name))
			neighbour := reserved(t, writer, sameBucket(writer, rec.Scope))
			done := make(chan error, 1)
			go func() { done <- waiter.Wait(ctx, rec.Scope, rec.Version, rec.Token) }()
			time.Sleep(50 * time.Millisecond)
			p := core.PolicyDefault()
			if _, err := applyOver(ctx, writer, &p, neighbour.Scope, core.Event{Kind: core.EventHeartbeat, Token: neighbour.Token}); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				t.Fatalf("woken by another record's write: %v", err)
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := applyOver(ctx, writer, &p, rec.Scope, core.Event{Kind: core.EventHeartbeat, Token: rec.Token}); err != nil {
				t.Fatal(err)
			}
			wokenWithin(t, done, 2*time.Second, "of the write (the poll is 10 s)")
		})
	}
}

// TestWaitPollsOnly: with pub/sub off (a negative PollInterval), the poll
// alone wakes the waiter.
func TestWaitPollsOnly(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, standaloneClient(t), Options{PollInterval: -20 * time.Millisecond})
	rec := reserved(t, s, testScope("poll-only"))
	done := make(chan error, 1)
	go func() { done <- s.Wait(ctx, rec.Scope, rec.Version, rec.Token) }()
	p := core.PolicyDefault()
	if _, err := applyOver(ctx, s, &p, rec.Scope, core.Event{Kind: core.EventHeartbeat, Token: rec.Token}); err != nil {
		t.Fatal(err)
	}
	wokenWithin(t, done, time.Second, "of the write, by the poll")
	if len(s.subs.subs) != 0 {
		t.Fatal("a store with pub/sub off subscribed")
	}
}

// wokenWithin fails unless a Wait ends well (on done) within d.
func wokenWithin(t *testing.T, done <-chan error, d time.Duration, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(d):
		t.Fatalf("not woken within %v %s", d, what)
	}
}
