// Package memstore is the reference Store: in memory, linearizable, safe for
// concurrent use, sharded so that cores do not contend on one lock. Waiters
// are woken when their record changes. It keeps nothing across restarts: use
// it for tests, the simulator, and single-process services that accept that.
package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// Options configure a Store. The zero value is usable.
type Options struct {
	// Clock is the store's time (time.Now if nil). Inject a fake for tests
	// and the simulator.
	Clock func() time.Time
	// RecordsMax bounds the number of records; 0 means no bound. A full
	// store refuses new records with idem.ErrStoreFull: it never evicts a
	// live record to make room.
	RecordsMax int
	// Shards is the number of independently locked parts, rounded up to a
	// power of two (64 if zero).
	Shards int
}

// Store is the in-memory driver. Create it with New.
type Store struct {
	shards     []shard
	mask       uint64
	clock      func() time.Time
	recordsMax int64
	records    atomic.Int64
}

type shard struct {
	mu sync.Mutex
	// records is keyed by the idempotency key alone, which is random and
	// cheap to hash; the rare scopes that share a key text hang off next.
	records map[string]*slot
	waiters map[core.Scope]chan struct{}
	// tokens only grows: every Load hands out the next one, so a token is
	// never repeated for any scope of the shard, deleted records included.
	tokens uint64
	_      [64]byte // keep neighbouring shards' locks off one cache line
}

// slot holds one record and the next record whose scope has the same key.
type slot struct {
	rec  core.Record
	next *slot
}

// find returns the record of scope, or nil. Called with sh.mu held.
func (sh *shard) find(scope *core.Scope) *core.Record {
	for sl := sh.records[scope.Key]; sl != nil; sl = sl.next {
		if sl.rec.Scope == *scope {
			return &sl.rec
		}
	}
	return nil
}

// put adds rec, whose scope has no record. Called with sh.mu held.
func (sh *shard) put(rec *core.Record) {
	sh.records[rec.Scope.Key] = &slot{rec: *rec, next: sh.records[rec.Scope.Key]}
}

// drop removes the record of scope, which exists. Called with sh.mu held.
func (sh *shard) drop(scope *core.Scope) {
	head := sh.records[scope.Key]
	if head.rec.Scope == *scope {
		if head.next == nil {
			delete(sh.records, scope.Key)
		} else {
			sh.records[scope.Key] = head.next
		}
		return
	}
	for prev := head; prev.next != nil; prev = prev.next {
		if prev.next.rec.Scope == *scope {
			prev.next = prev.next.next
			return
		}
	}
}

var _ idem.Store = (*Store)(nil)
var _ idem.Applier = (*Store)(nil)

// New returns an empty Store.
func New(o Options) *Store {
	n := 64
	if o.Shards > 0 {
		n = 1
		for n < o.Shards {
			n *= 2
		}
	}
	s := &Store{shards: make([]shard, n), mask: uint64(n - 1), clock: o.Clock, recordsMax: int64(o.RecordsMax)}
	if s.clock == nil {
		s.clock = time.Now
	}
	for i := range s.shards {
		s.shards[i].records = map[string]*slot{}
		s.shards[i].waiters = map[core.Scope]chan struct{}{}
	}
	return s
}

// shard picks the scope's shard from its key alone: keys are random, so they
// spread well, and all scopes of one key text meet in one shard, where the
// map finds them. The hash is deterministic across runs (the simulator's
// output must not depend on a random seed) and reads 8 bytes at a time.
func (s *Store) shard(scope *core.Scope) *shard {
	k := scope.Key
	h := uint64(len(k)) * 0x9e3779b97f4a7c15
	for len(k) >= 8 {
		w := uint64(k[0]) | uint64(k[1])<<8 | uint64(k[2])<<16 | uint64(k[3])<<24 |
			uint64(k[4])<<32 | uint64(k[5])<<40 | uint64(k[6])<<48 | uint64(k[7])<<56
		h = (h ^ w) * 0xff51afd7ed558ccd
		k = k[8:]
	}
	for i := 0; i < len(k); i++ {
		h = (h ^ uint64(k[i])) * 0xc4ceb9fe1a85ec53
	}
	h ^= h >> 33
	return &s.shards[h&s.mask]
}

// Len is the number of records held.
func (s *Store) Len() int { return int(s.records.Load()) }

// Load implements idem.Store.
func (s *Store) Load(ctx context.Context, scope core.Scope) (idem.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return idem.Snapshot{}, err
	}
	sh := s.shard(&scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.snapshot(&scope, s.clock()), nil
}

// snapshot reads scope under sh.mu. The record's response slices are shared
// with the store: callers must not modify them (idem.Store's contract).
func (sh *shard) snapshot(scope *core.Scope, now time.Time) idem.Snapshot {
	sh.tokens++
	snap := idem.Snapshot{Now: now, FreshToken: core.Token(sh.tokens)}
	if r := sh.find(scope); r != nil {
		snap.Record = *r
	} else {
		snap.Record.Scope = *scope
	}
	return snap
}

// Insert implements idem.Store.
func (s *Store) Insert(ctx context.Context, rec *core.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh := s.shard(&rec.Scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.find(&rec.Scope) != nil {
		return fmt.Errorf("memstore: insert %s: %w", rec.Scope, idem.ErrConflict)
	}
	return s.insert(sh, rec)
}

func (s *Store) insert(sh *shard, rec *core.Record) error {
	if s.recordsMax > 0 && s.records.Load() >= s.recordsMax {
		return fmt.Errorf("memstore: %d records: %w", s.recordsMax, idem.ErrStoreFull)
	}
	s.records.Add(1)
	c := *rec
	c.Response = rec.Response.Clone()
	sh.put(&c)
	sh.wake(rec.Scope)
	return nil
}

// CompareAndSet implements idem.Store.
func (s *Store) CompareAndSet(ctx context.Context, rec *core.Record, expectVersion uint64, expectToken core.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh := s.shard(&rec.Scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	cur := sh.find(&rec.Scope)
	if cur == nil || cur.Version != expectVersion || cur.Token != expectToken {
		return fmt.Errorf("memstore: compare-and-set %s: %w", rec.Scope, idem.ErrConflict)
	}
	*cur = *rec
	cur.Response = rec.Response.Clone()
	sh.wake(rec.Scope)
	return nil
}

// Delete implements idem.Store.
func (s *Store) Delete(ctx context.Context, scope core.Scope, expectVersion uint64, expectToken core.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh := s.shard(&scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	cur := sh.find(&scope)
	if cur == nil || cur.Version != expectVersion || cur.Token != expectToken {
		return fmt.Errorf("memstore: delete %s: %w", scope, idem.ErrConflict)
	}
	s.remove(sh, scope)
	return nil
}

func (s *Store) remove(sh *shard, scope core.Scope) {
	sh.drop(&scope)
	s.records.Add(-1)
	sh.wake(scope)
}

// wake releases everyone waiting on scope. Called with sh.mu held.
func (sh *shard) wake(scope core.Scope) {
	if ch := sh.waiters[scope]; ch != nil {
		close(ch)
		delete(sh.waiters, scope)
	}
}

// Wait implements idem.Store: it blocks on a channel closed by the next
// write to scope, without polling.
func (s *Store) Wait(ctx context.Context, scope core.Scope, version uint64, token core.Token) error {
	sh := s.shard(&scope)
	sh.mu.Lock()
	if r := sh.find(&scope); r == nil || r.Version != version || r.Token != token {
		sh.mu.Unlock()
		return nil
	}
	ch := sh.waiters[scope]
	if ch == nil {
		ch = make(chan struct{})
		sh.waiters[scope] = ch
	}
	sh.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Due implements idem.Store. It scans every shard: fine for a reference
// driver, and the order (most overdue first, then by scope) is
// deterministic, which the simulator needs.
func (s *Store) Due(ctx context.Context, kind idem.DueKind, limit int) ([]core.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	now := s.clock()
	type due struct {
		at  time.Time
		rec core.Record
	}
	var found []due
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, sl := range sh.records {
			for ; sl != nil; sl = sl.next {
				if at, ok := dueAt(&sl.rec, kind); ok && !at.After(now) {
					found = append(found, due{at, sl.rec})
				}
			}
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(found, func(a, b due) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.rec.Scope.String(), b.rec.Scope.String())
	})
	out := make([]core.Record, 0, min(limit, len(found)))
	for i := 0; i < len(found) && i < limit; i++ {
		out = append(out, found[i].rec)
	}
	return out, nil
}

// dueAt is when r becomes due for kind, if ever.
func dueAt(r *core.Record, kind idem.DueKind) (time.Time, bool) {
	switch {
	case kind == idem.DueSweep && r.Status == core.StatusInProgress:
		return r.LockedUntil, true
	case kind == idem.DueSweep && (r.Status == core.StatusCompleted || r.Status == core.StatusFailedRetryable):
		return r.ExpiresAt, true
	case kind == idem.DueReconcile && r.Status == core.StatusUnknown && !r.ReconcileAfter.IsZero():
		return r.ReconcileAfter, true
	}
	return time.Time{}, false
}

// Apply implements idem.Applier: load, core.Step and write under the shard's
// lock, so that concurrent events on one scope never lose a race.
func (s *Store) Apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy) (idem.Applied, error) {
	if err := ctx.Err(); err != nil {
		return idem.Applied{}, err
	}
	sh := s.shard(&scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	snap := sh.snapshot(&scope, s.clock())
	ev.Now = snap.Now
	if ev.Kind == core.EventReserve {
		ev.Token = snap.FreshToken
	}
	a := idem.Applied{Before: snap.Record.Status, Record: snap.Record, Now: snap.Now}
	res, err := core.Step(&a.Record, &ev, p)
	if err != nil {
		return idem.Applied{}, err
	}
	a.Result = res
	switch res.Write.Kind {
	case core.WriteInsert:
		if err := s.insert(sh, &a.Record); err != nil {
			return idem.Applied{}, err
		}
	case core.WriteUpdate:
		cur := sh.find(&scope)
		*cur = a.Record
		if ev.Kind == core.EventComplete || ev.Kind == core.EventResolve {
			// The only events that bring a response from outside the store.
			cur.Response = a.Record.Response.Clone()
		}
		sh.wake(scope)
	case core.WriteDelete:
		s.remove(sh, scope)
	}
	return a, nil
}
