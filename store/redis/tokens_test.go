package redisstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/core"
)

// TestTokenLayout: a fresh token names its bucket in its low 8 bits and
// is never below the server's clock in microseconds above them, on one
// server and across the primaries of a cluster.
func TestTokenLayout(t *testing.T) {
	for name, c := range map[string]redis.UniversalClient{"standalone": standaloneClient(t), "cluster": clusterClient(t)} {
		s := newTestStore(t, c, Options{})
		for i := range 128 {
			sc := testScope(name + "-layout-" + strconv.Itoa(i))
			snap, err := s.Load(context.Background(), sc)
			if err != nil {
				t.Fatal(err)
			}
			o := s.scoped(sc)
			if b := int(snap.FreshToken & (1<<bucketBits - 1)); b != o.b {
				t.Fatalf("%s: token %#x names bucket %d, the scope is in %d", name, snap.FreshToken, b, o.b)
			}
			if c := uint64(snap.FreshToken >> bucketBits); c < uint64(snap.Now.UnixMicro()) {
				t.Fatalf("%s: token counter %d below the server's clock %d µs", name, c, snap.Now.UnixMicro())
			}
		}
	}
}

// TestTokensSurviveALostCounter: a bucket's counter lost (a failover that
// lost its last writes, an operator's FLUSHALL) starts again from the
// server's clock, above every token handed out before, so a record's
// token is never handed out again.
func TestTokensSurviveALostCounter(t *testing.T) {
	ctx := context.Background()
	c := standaloneClient(t)
	s := newTestStore(t, c, Options{})
	sc := testScope("lost-counter")
	rec := reserved(t, s, sc)
	o := s.scoped(sc)
	last := rec.Token
	for range 3 {
		if err := c.Del(ctx, s.l.tokens(o.b)).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		snap, err := s.Load(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		if snap.FreshToken <= last {
			t.Fatalf("after the counter was lost, fresh token %d is not above %d", snap.FreshToken, last)
		}
		last = snap.FreshToken
	}
	p := core.PolicyDefault()
	if a, err := applyOver(ctx, s, &p, sc, core.Event{Kind: core.EventComplete, Token: rec.Token, Response: core.Response{StatusCode: 200}}); err != nil || a.Transition.Decision.Kind != core.DecisionCompleted {
		t.Fatalf("the owner's completion after the counter was lost: %s, %v", a.Transition.Describe(), err)
	}
}
