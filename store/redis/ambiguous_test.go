package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// sampleRecord is a completed record of sc with token tok.
func sampleRecord(sc core.Scope, now time.Time, tok core.Token) core.Record {
	return core.Record{Scope: sc, Status: core.StatusCompleted, Fingerprint: testFP, Token: tok, Version: 1,
		Response: core.Response{StatusCode: 201, Body: []byte("{}")}, CreatedAt: now, CompletedAt: now, ExpiresAt: now.Add(time.Hour)}
}

// TestTimeoutIsAmbiguous: a script whose reply does not come back in time
// is ErrAmbiguous, never store.ErrConflict, even though it ran once the
// server was free again. (go-redis, left to itself, would have sent it
// again after the timeout: the second run would have found the first's
// record and reported a failed precondition for a write that applied.)
func TestTimeoutIsAmbiguous(t *testing.T) {
	ctx := context.Background()
	addr := extraServer(t, "--enable-debug-command", "yes")
	c := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 100 * time.Millisecond})
	defer c.Close()
	admin := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: -1})
	defer admin.Close()
	s := newTestStore(t, c, Options{})
	sc := testScope("timeout")
	snap, err := s.Load(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	rec := sampleRecord(sc, snap.Now, snap.FreshToken)
	slept := make(chan error, 1)
	go func() { slept <- admin.Do(ctx, "DEBUG", "SLEEP", "0.5").Err() }()
	time.Sleep(50 * time.Millisecond) // the server is asleep
	err = s.Insert(ctx, &rec)
	if !errors.Is(err, ErrAmbiguous) || errors.Is(err, store.ErrConflict) {
		t.Fatalf("insert that timed out: %v, want ErrAmbiguous", err)
	}
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	if got.Record.Version != 1 || got.Record.Token != rec.Token {
		t.Fatalf("after the ambiguous insert the record is %s: the script should have run once the server woke", got.Record.Describe())
	}
}

// TestReplicasWaitNotMet: with ReplicasWait, a write no replica
// acknowledged is ambiguous (ErrNotReplicated), never a success, though
// the primary applied it.
func TestReplicasWaitNotMet(t *testing.T) {
	ctx := context.Background()
	c := standaloneClient(t) // no replica
	s := newTestStore(t, c, Options{ReplicasWait: 1, ReplicasWaitTimeout: 20 * time.Millisecond})
	plain, err := New(ctx, c, Options{Prefix: s.opt.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	sc := testScope("not-replicated")
	if _, err := s.Load(ctx, sc); !errors.Is(err, ErrNotReplicated) || !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("load without a replica: %v, want ErrNotReplicated and ErrAmbiguous", err)
	}
	snap, err := plain.Load(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	rec := sampleRecord(sc, snap.Now, snap.FreshToken)
	if err := s.Insert(ctx, &rec); !errors.Is(err, ErrNotReplicated) || !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("insert without a replica: %v, want ErrNotReplicated and ErrAmbiguous", err)
	}
	if got, err := plain.Load(ctx, sc); err != nil || got.Record.Token != rec.Token {
		t.Fatalf("the primary should hold the unreplicated insert: %s, %v", got.Record.Describe(), err)
	}
}
