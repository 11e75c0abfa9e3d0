package pgxstore

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// wakeBound is how long a test lets a Wait take to be woken: far more than
// a notification or a short poll takes, so that only a Wait nothing wakes
// reaches it.
const wakeBound = 15 * time.Second

// waitThrough starts a Wait on rec, lets it mark rec's row (so that the
// next write to it notifies), runs write, and fails unless the Wait
// returned nil within wakeBound.
func waitThrough(t *testing.T, db *testDB, s *Store, rec core.Record, write func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wakeBound)
	defer cancel()
	woke := make(chan error, 1)
	go func() { woke <- s.Wait(ctx, rec.Scope, rec.Version, rec.Token) }()
	for marked := false; !marked; { // until the waiter's read marked the row
		err := db.pool.QueryRow(ctx, `SELECT waiters FROM `+s.n.qualified+` WHERE `+scopeMatch, scopeNamed(rec.Scope)).Scan(&marked)
		if err != nil {
			t.Fatalf("reading the row's mark: %v", err)
		}
	}
	write()
	if err := <-woke; err != nil {
		t.Fatalf("Wait: %v, want it woken by the write", err)
	}
}

// TestEveryWriteNotifiesItsWaiters: each kind of write to a row a Wait
// marked wakes the Wait by NOTIFY (the poll is an hour): a compare-and-set,
// the held path's one-statement update, a delete, and Prune's batch.
func TestEveryWriteNotifiesItsWaiters(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{PollInterval: time.Hour})
	ctx := context.Background()
	p := core.PolicyDefault()
	t.Run("compare-and-set", func(t *testing.T) {
		rec := reserved(t, s, testScope("notify-cas"))
		waitThrough(t, db, s, rec, func() {
			next := rec
			next.Version++
			if err := s.CompareAndSet(ctx, &next, rec.Version, rec.Token); err != nil {
				t.Error(err)
			}
		})
	})
	t.Run("apply-held", func(t *testing.T) {
		rec := reserved(t, s, testScope("notify-held"))
		waitThrough(t, db, s, rec, func() {
			held := rec
			ev := core.Event{Kind: core.EventComplete, Token: rec.Token, Response: core.Response{StatusCode: 201}}
			if err := store.ApplyHeld(ctx, s, &held, ev, &p, new(store.Applied)); err != nil {
				t.Error(err)
			}
		})
	})
	t.Run("delete", func(t *testing.T) {
		rec := reserved(t, s, testScope("notify-delete"))
		waitThrough(t, db, s, rec, func() {
			if err := s.Delete(ctx, rec.Scope, rec.Version, rec.Token); err != nil {
				t.Error(err)
			}
		})
	})
	t.Run("prune", func(t *testing.T) {
		sc := testScope("notify-prune")
		seed(t, s, []core.Scope{sc}, tombstone(-time.Minute))
		snap, err := s.Load(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		waitThrough(t, db, s, snap.Record, func() {
			if n, err := s.Prune(ctx, &p, 10); n != 1 || err != nil {
				t.Errorf("Prune: %d, %v; want the tombstone", n, err)
			}
		})
	})
}

// TestWaitPollsBesideNotifications: a Wait whose notification was lost
// (here the row's mark is cleared behind its back, as when the listener
// was reconnecting: the write then notifies nobody) is served by its poll,
// and so is a Wait on an absent record (no row to mark: its insert
// notifies nobody). The listener is connected first, by a Wait a
// notification woke: its connection wakes every waiter once, which would
// otherwise serve these Waits in the poll's place.
func TestWaitPollsBesideNotifications(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{PollInterval: 20 * time.Millisecond})
	ctx := context.Background()
	warm := reserved(t, s, testScope("wait-poll-warm"))
	waitThrough(t, db, s, warm, func() {
		next := warm
		next.Version++
		if err := s.CompareAndSet(ctx, &next, warm.Version, warm.Token); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("notification lost", func(t *testing.T) {
		rec := reserved(t, s, testScope("wait-poll"))
		waitThrough(t, db, s, rec, func() {
			if _, err := db.pool.Exec(ctx, `UPDATE `+s.n.qualified+` SET waiters = false`); err != nil {
				t.Fatal(err)
			}
			next := rec
			next.Version++
			if err := s.CompareAndSet(ctx, &next, rec.Version, rec.Token); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("absent record", func(t *testing.T) {
		sc := testScope("wait-poll-absent")
		wctx, cancel := context.WithTimeout(ctx, wakeBound)
		defer cancel()
		woke := make(chan error, 1)
		go func() { woke <- s.Wait(wctx, sc, 0, 0) }()
		time.Sleep(100 * time.Millisecond) // the Wait has read the absent record and sleeps
		reserved(t, s, sc)
		if err := <-woke; err != nil {
			t.Fatalf("Wait on an absent record: %v, want its poll to find the insert", err)
		}
	})
}
