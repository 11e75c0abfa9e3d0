package storetest

import (
	"context"
	"errors"
	"testing"
	"time"
)

// wait: Store.Wait returns by its context's deadline on an unchanged
// record, at once on a version the record no longer has, and soon after a
// write or a delete of the record: the core's in-flight wait counts on it
// to answer a duplicate as soon as the attempt it waits for ends.
func (c *contract) wait(t *testing.T) {
	s := c.newStore(t)
	ctx := context.Background()
	sc := c.scope(t, 0)
	snap := load(t, s, sc)
	rec := sample(sc, snap.Now, snap.FreshToken, 1)
	wantOK(t, "insert", s.Insert(ctx, &rec))
	const bound = 5 * time.Second
	// Unchanged: it returns by the deadline, with the context's error
	// unless it returned spuriously (allowed).
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	start := time.Now()
	err := s.Wait(short, sc, 1, rec.Token)
	cancel()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on an unchanged record: %v", err)
	}
	if time.Since(start) > bound {
		t.Fatalf("Wait outlived its context by %v", time.Since(start))
	}
	// A version that is not the record's returns at once.
	done := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 2*bound)
		defer cancel()
		done <- s.Wait(wctx, sc, 7, rec.Token)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait on a stale version: %v", err)
		}
	case <-time.After(bound):
		t.Fatalf("Wait on a stale version: still waiting after %v", bound)
	}
	woken := func(what string, version uint64, write func()) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 2*bound)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- s.Wait(wctx, sc, version, rec.Token) }()
		time.Sleep(10 * time.Millisecond)
		write()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Wait woken by %s: %v", what, err)
			}
		case <-time.After(bound):
			t.Fatalf("Wait not woken by %s within %v", what, bound)
		}
	}
	next := rec
	next.Version = 2
	woken("a compare-and-set", 1, func() { wantOK(t, "compare-and-set", s.CompareAndSet(ctx, &next, 1, rec.Token)) })
	woken("a delete", 2, func() { wantOK(t, "delete", s.Delete(ctx, sc, 2, rec.Token)) })
}
