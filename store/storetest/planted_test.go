package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Drivers with one planted bug each, built over a correct store (the memory
// store, in suite_catches_test.go): each embeds store.Store, so that its
// own methods are what the suite calls (the inner store's Apply is hidden).

// errorCodeDropper writes every record without its error code, as a driver
// that forgot a column would: the rest of the record loads back as written.
type errorCodeDropper struct{ store.Store }

func (s errorCodeDropper) Insert(ctx context.Context, rec *core.Record) error {
	r := *rec
	r.LastErrorCode = ""
	return s.Store.Insert(ctx, &r)
}

func (s errorCodeDropper) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, tok core.Token) error {
	r := *rec
	r.LastErrorCode = ""
	return s.Store.CompareAndSet(ctx, &r, v, tok)
}

// writeCountedTokens hands out as fresh the token after the largest one
// written so far: loads that write nothing get the same token again.
type writeCountedTokens struct {
	store.Store
	mu      sync.Mutex
	written core.Token
}

func (s *writeCountedTokens) Load(ctx context.Context, sc core.Scope) (store.Snapshot, error) {
	snap, err := s.Store.Load(ctx, sc)
	s.mu.Lock()
	snap.FreshToken = s.written + 1
	s.mu.Unlock()
	return snap, err
}

func (s *writeCountedTokens) wrote(tok core.Token, err error) error {
	if err == nil {
		s.mu.Lock()
		s.written = max(s.written, tok)
		s.mu.Unlock()
	}
	return err
}

func (s *writeCountedTokens) Insert(ctx context.Context, rec *core.Record) error {
	return s.wrote(rec.Token, s.Store.Insert(ctx, rec))
}

func (s *writeCountedTokens) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, tok core.Token) error {
	return s.wrote(rec.Token, s.Store.CompareAndSet(ctx, rec, v, tok))
}

// scopeTokens counts fresh tokens per scope: they grow for each scope, and
// repeat across scopes.
type scopeTokens struct {
	store.Store
	mu   sync.Mutex
	next map[core.Scope]core.Token
}

func (s *scopeTokens) Load(ctx context.Context, sc core.Scope) (store.Snapshot, error) {
	snap, err := s.Store.Load(ctx, sc)
	s.mu.Lock()
	s.next[sc]++
	snap.FreshToken = s.next[sc]
	s.mu.Unlock()
	return snap, err
}

// deafToDeletes waits by polling until the record is there with another
// version or token: a Wait on a record that is deleted never returns.
type deafToDeletes struct{ store.Store }

func (s deafToDeletes) Wait(ctx context.Context, sc core.Scope, v uint64, tok core.Token) error {
	for {
		snap, err := s.Load(ctx, sc)
		if err != nil {
			return err
		}
		if snap.Record.Exists() && (snap.Record.Version != v || snap.Record.Token != tok) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// reconcileReversed lists the records due for reconciliation most overdue
// last (as an index read backwards would); Due(sweep) is correct.
type reconcileReversed struct{ store.Store }

func (s reconcileReversed) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	recs, err := s.Store.Due(ctx, kind, limit)
	if kind == store.DueReconcile {
		slices.Reverse(recs)
	}
	return recs, err
}

// limitZeroIsAll reads a limit of 0 as no limit at all.
type limitZeroIsAll struct{ store.Store }

func (s limitZeroIsAll) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	if limit == 0 {
		limit = 1 << 20
	}
	return s.Store.Due(ctx, kind, limit)
}

// beforeIsAfter is s with a fast path (Apply) that reports the record's
// status after the event as Applied.Before, when planted; as it is, else.
func beforeIsAfter(s store.Store, planted bool) store.Store {
	return store.Wrap(store.Layer{Outer: s, Inner: s, Apply: func(next store.ApplyFunc) store.ApplyFunc {
		return func(ctx context.Context, sc core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
			err := next(ctx, sc, ev, p, out)
			if planted {
				out.Before = out.Record.Status
			}
			return err
		}
	}})
}

// errPlantedTokenNotFresh is what a planted fast path returns now and then.
var errPlantedTokenNotFresh = fmt.Errorf("planted: a reserve over a stored record with its own token: %w", core.ErrTokenNotFresh)

// driverBugs is s with a fast path (Apply) that, when planted, answers
// every fifth reserve with a driver bug (a token that is not fresh, as the
// core refuses it) and applies nothing: nothing wrong is written, so only
// a suite that reports driver bugs sees it.
func driverBugs(s store.Store, planted bool) store.Store {
	var reserves atomic.Int64
	return store.Wrap(store.Layer{Outer: s, Inner: s, Apply: func(next store.ApplyFunc) store.ApplyFunc {
		return func(ctx context.Context, sc core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
			if planted && ev.Kind == core.EventReserve && reserves.Add(1)%5 == 0 {
				return errPlantedTokenNotFresh
			}
			return next(ctx, sc, ev, p, out)
		}
	}})
}
