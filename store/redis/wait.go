package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/idemkit/idem/core"
)

// Wait implements store.Store. It subscribes to the bucket's channel (sharded
// pub/sub: SSUBSCRIBE), then marks the record as waited on if it still has
// version and token (one script, watch.lua), so that the record's next
// write, whoever makes it, publishes on the channel (a write of a record
// nobody waits on publishes nothing). It returns on that message, or when a
// poll after a jittered Options.PollInterval finds the record changed (a
// message lost to a reconnect or a failover only delays it), or when ctx is
// done. A record that is absent waits as one with version and token 0.
func (s *Store) Wait(ctx context.Context, scope core.Scope, version uint64, token core.Token) error {
	o := s.scoped(scope)
	interval := s.opt.PollInterval
	var woken <-chan struct{}
	if interval > 0 {
		ch, cancel, err := s.subs.register(ctx, o.b, o.payload)
		if err == nil {
			defer cancel()
			woken = ch
		}
		// A subscription that failed leaves the poll alone to wake the waiter.
	} else {
		interval = -interval
	}
	for {
		changed, err := s.watch(ctx, o, version, token)
		if err != nil || changed {
			return err
		}
		t := time.NewTimer(interval/2 + rand.N(interval/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-woken:
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// watch reports whether the record no longer has version and token, and
// marks it as waited on when it still has.
func (s *Store) watch(ctx context.Context, o *scoped, version uint64, token core.Token) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	keys := []string{o.keys[0], s.l.waited(o.b)}
	args := []any{o.m, strconv.FormatUint(version, 10), strconv.FormatUint(uint64(token), 16)}
	v, err := s.evalOn(ctx, s.client, "wait", s.scripts.watch, evalArgs(s.scripts.watch, keys, 0, args...))
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, err
	}
	n, ok := v.(int64)
	if !ok {
		return false, fmt.Errorf("redisstore: wait: the script answered %v: %w", v, core.ErrInvalidRecord)
	}
	return n == 1, nil
}
