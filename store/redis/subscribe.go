package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// subscribers are a Store's subscriptions to its buckets' change channels,
// opened at the first Wait that needs each and kept until Close, and the
// waiters each message wakes. One server has one subscription to every
// bucket's channel (one connection); a cluster has one per bucket, on the
// primary that serves it (a subscription lives on one node).
type subscribers struct {
	s       *Store
	mu      sync.Mutex
	subs    map[int]*subscription
	waiters map[string]map[chan struct{}]struct{} // by payload
	closed  bool
}

type subscription struct {
	ready chan struct{} // closed once subscribed, or failed (err)
	err   error
	ps    *redis.PubSub
}

// subscribeTimeout bounds how long a subscription may take to open; its
// waiters poll meanwhile.
const subscribeTimeout = 10 * time.Second

var errClosed = errors.New("redisstore: the store is closed")

func newSubscribers(s *Store) *subscribers {
	return &subscribers{s: s, subs: map[int]*subscription{}, waiters: map[string]map[chan struct{}]struct{}{}}
}

// register makes sure bucket b's channel is subscribed to (the server has
// confirmed it) and returns a channel that a message naming payload wakes,
// and the function that forgets it.
func (ss *subscribers) register(ctx context.Context, b int, payload string) (<-chan struct{}, func(), error) {
	ch := make(chan struct{}, 1)
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return nil, nil, errClosed
	}
	if ss.waiters[payload] == nil {
		ss.waiters[payload] = map[chan struct{}]struct{}{}
	}
	ss.waiters[payload][ch] = struct{}{}
	key := 0
	if ss.s.cluster != nil {
		key = b
	}
	sub, ok := ss.subs[key]
	if !ok {
		sub = &subscription{ready: make(chan struct{})}
		ss.subs[key] = sub
		go ss.open(key, sub)
	}
	ss.mu.Unlock()
	cancel := func() {
		ss.mu.Lock()
		delete(ss.waiters[payload], ch)
		if len(ss.waiters[payload]) == 0 {
			delete(ss.waiters, payload)
		}
		ss.mu.Unlock()
	}
	select {
	case <-sub.ready:
	case <-ctx.Done():
		cancel()
		return nil, nil, ctx.Err()
	}
	if sub.err != nil {
		cancel()
		ss.mu.Lock()
		if ss.subs[key] == sub {
			delete(ss.subs, key) // the next Wait tries again
		}
		ss.mu.Unlock()
		return nil, nil, sub.err
	}
	return ch, cancel, nil
}

// open subscribes sub to the channels of key's buckets, waits for the
// server's confirmation of each, then delivers messages until Close.
func (ss *subscribers) open(key int, sub *subscription) {
	channels := []string{ss.s.l.channel(key)}
	if ss.s.cluster == nil {
		channels = channels[:0]
		for b := range bucketCount {
			channels = append(channels, ss.s.l.channel(b))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), subscribeTimeout)
	defer cancel()
	ps := ss.s.client.SSubscribe(ctx, channels...)
	for range channels {
		msg, err := ps.Receive(ctx)
		if _, ok := msg.(*redis.Subscription); err == nil && !ok {
			err = fmt.Errorf("redisstore: wait: subscribing, the server answered %v", msg)
		}
		if err != nil {
			_ = ps.Close()
			sub.err = err
			close(sub.ready)
			return
		}
	}
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		_ = ps.Close()
		sub.err = errClosed
		close(sub.ready)
		return
	}
	sub.ps = ps
	ss.mu.Unlock()
	close(sub.ready)
	for msg := range ps.Channel() {
		ss.wake(msg.Payload)
	}
}

func (ss *subscribers) wake(payload string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for ch := range ss.waiters[payload] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (ss *subscribers) close() {
	ss.mu.Lock()
	ss.closed = true
	subs := ss.subs
	ss.subs = map[int]*subscription{}
	ss.mu.Unlock()
	for _, sub := range subs {
		go func() { // a subscription still opening is closed once it is open
			<-sub.ready
			if sub.ps != nil {
				_ = sub.ps.Close()
			}
		}()
	}
}
