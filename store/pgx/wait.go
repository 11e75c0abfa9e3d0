package pgxstore

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Reconnection backoff of the listening connection: doubled after each
// failure, with jitter, so that many instances do not reconnect in step
// after a server restart.
const (
	listenBackoffMin = 50 * time.Millisecond
	listenBackoffMax = 5 * time.Second
)

// listener is a Store's one listening connection. It is started by the
// first Wait and serves every waiter of the Store: a notification's payload
// (a hash of the scope, see notifyPayload) wakes the waiters of that hash.
type listener struct {
	pool    *pgxpool.Pool
	channel string

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	cancel  context.CancelFunc
	done    chan struct{}
	closed  bool
}

func newListener(pool *pgxpool.Pool, channel string) *listener {
	return &listener{pool: pool, channel: channel, waiters: map[string]map[chan struct{}]struct{}{}}
}

// register adds a waiter for payload, starting the connection if needed.
// The returned function removes it.
func (l *listener) register(payload string) (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ch, func() {}
	}
	if l.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel, l.done = cancel, make(chan struct{})
		go l.run(ctx)
	}
	set := l.waiters[payload]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		l.waiters[payload] = set
	}
	set[ch] = struct{}{}
	return ch, func() {
		l.mu.Lock()
		delete(set, ch)
		if len(set) == 0 && l.waiters[payload] != nil && len(l.waiters[payload]) == 0 {
			delete(l.waiters, payload)
		}
		l.mu.Unlock()
	}
}

func (l *listener) wake(payload string) {
	l.mu.Lock()
	for ch := range l.waiters[payload] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	l.mu.Unlock()
}

// wakeAll wakes every waiter: after a reconnection, notifications sent
// while no connection listened are lost, so everyone loads again.
func (l *listener) wakeAll() {
	l.mu.Lock()
	for _, set := range l.waiters {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	l.mu.Unlock()
}

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	backoff := listenBackoffMin
	for ctx.Err() == nil {
		if l.listen(ctx) {
			backoff = listenBackoffMin
		}
		t := time.NewTimer(jitter(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, listenBackoffMax)
	}
}

// listen connects, listens and dispatches until the connection fails; it
// reports whether it got as far as listening.
func (l *listener) listen(ctx context.Context) bool {
	cfg := l.pool.Config().ConnConfig.Copy()
	cfg.Tracer = nil // the pool's tracer counts the store's round trips, not the listener's
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		return false
	}
	l.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true
		}
		l.wake(n.Payload)
	}
}

func (l *listener) close() {
	l.mu.Lock()
	l.closed = true
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// jitter is d scaled by a random factor in [0.5, 1).
func jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// Wait implements store.Store. A notification on the Store's channel wakes
// it; a jittered poll (Options.PollInterval) backs that up, so that a lost
// notification (a reconnection, a missed LISTEN) only delays it. It returns
// nil when the record changed (or spuriously), ctx.Err() when ctx ends.
//
// Writes notify only when a waiter may care: each of Wait's reads marks the
// row (a flag outside the record: no version bump), and the next write to a
// marked row notifies and clears the mark, in the same statement. A write
// nobody waits for sends no NOTIFY (see notifyIfWaited for why that
// matters). A Wait on an absent record has no row to mark: the insert that
// creates it does not notify, and the poll finds it.
func (s *Store) Wait(ctx context.Context, scope core.Scope, version uint64, token core.Token) error {
	var wake chan struct{}
	if s.listen != nil {
		var unregister func()
		wake, unregister = s.listen.register(notifyPayload(&scope))
		defer unregister()
	}
	interval := s.opt.PollInterval
	if interval < 0 {
		interval = -interval
	}
	o := s.ops()
	for {
		// Registered first, then read and marked: a write after the mark
		// notifies, and one before it is seen. An absent record has no row
		// to mark: it is read, and the poll finds its insert.
		var unchanged bool
		var err error
		if version == 0 && token == 0 {
			var snap store.Snapshot
			snap, err = o.load(ctx, scope)
			unchanged = snap.Record.Version == 0 && snap.Record.Token == 0
		} else {
			unchanged, err = o.waitMark(ctx, scope, version, token)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The store failed: wait out one interval rather than spin; the
			// caller loads again (and fails closed) either way.
		} else if !unchanged {
			return nil
		}
		timer := time.NewTimer(jitter(interval))
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}
