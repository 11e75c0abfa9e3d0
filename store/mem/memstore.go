// Package memstore is the reference Store: in memory, linearizable, safe for
// concurrent use, sharded so that cores do not contend on one lock. Waiters
// are woken when their record changes. It keeps nothing across restarts: use
// it for tests, the simulator, and single-process services that accept that.
package memstore

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Options configure a Store. The zero value is usable.
type Options struct {
	// Clock is the store's time. If nil, the wall time at New carried
	// forward by the monotonic clock. Inject a fake for tests and the simulator.
	Clock func() time.Time
	// RecordsMax bounds the number of records that are not tombstones; 0 (or
	// less) means no bound. A full store rejects new records with
	// store.ErrStoreFull: it never evicts a live record to make room. An
	// expired record (a tombstone: no response, pruned after the policy's
	// retention) frees its place, so that a full store recovers as soon as
	// its records expire.
	RecordsMax int
	// Shards is the number of independently locked parts, rounded up to a
	// power of two (64 if zero or less) and at most ShardsMax.
	Shards int
	// Step is the core the store steps events through in Apply: core.Step if
	// nil, or another build of it (the wasm module's, in the simulator's
	// -wasm-core runs).
	Step core.StepFunc
	// Deterministic places every scope, and so numbers the fencing tokens,
	// the same way in every process, as the simulator needs to replay a run
	// byte for byte. Leave it off in a service: its hash is not keyed, so
	// clients could choose keys that collide and slow a shard down.
	Deterministic bool
}

// ShardsMax bounds Options.Shards: more locks than this buy no parallelism
// and would only cost memory.
const ShardsMax = 1 << 16

// Store is the in-memory driver. Create it with New.
type Store struct {
	shards        []shard
	mask          uint64
	seed          maphash.Seed
	deterministic bool
	clock         func() time.Time
	recordsMax    int64
	step          core.StepFunc
	// records counts the records of a bounded store only: one counter
	// shared by every core would cost an unbounded store its scaling.
	records atomic.Int64
	audits  auditTrail // what operators settled by hand (audit.go)
}

var _ store.Store = (*Store)(nil)
var _ store.Applier = (*Store)(nil)
var _ store.HeldApplier = (*Store)(nil)

// New returns an empty Store.
func New(o Options) *Store {
	n := 64
	if o.Shards > 0 {
		n = 1
		for n < min(o.Shards, ShardsMax) {
			n *= 2
		}
	}
	s := &Store{shards: make([]shard, n), mask: uint64(n - 1), seed: maphash.MakeSeed(), deterministic: o.Deterministic,
		clock: o.Clock, recordsMax: int64(o.RecordsMax), step: o.Step}
	if s.clock == nil {
		// Wall time carried forward by the monotonic clock: it never steps
		// back (leases stay sound if the system clock is set back), and it
		// costs one clock read instead of time.Now's two.
		start := time.Now()
		s.clock = func() time.Time { return start.Add(time.Since(start)) }
	}
	for i := range s.shards {
		s.shards[i].id, s.shards[i].tokenShift = uint64(i), uint(bits.TrailingZeros(uint(n)))
	}
	return s
}

// shard picks the scope's shard, and the hash its index uses, from one
// 64-bit hash of the whole scope, computed once per call. By default the
// hash is keyed with a random seed per store (hash/maphash): keys and
// principals come from clients, and ones chosen to collide would otherwise
// turn a shard's index into a list. Options.Deterministic trades that for
// the same placement in every process.
func (s *Store) shard(scope *core.Scope) (*shard, uint32) {
	var h uint64
	if s.deterministic {
		h = mix(mix(mix(mix(0, scope.Key), scope.Principal), scope.UseCase), scope.Tenant)
		// Finish as murmur3's fmix64 does: without it the low bits, which
		// pick the shard, never see the high half of any 8-byte word.
		h = (h ^ h>>33) * 0xff51afd7ed558ccd
		h = (h ^ h>>33) * 0xc4ceb9fe1a85ec53
		h ^= h >> 33
	} else {
		h = maphash.String(s.seed, scope.Key)
		h = (h ^ maphash.String(s.seed, scope.Principal)) * 0x9e3779b97f4a7c15
		h = (h ^ maphash.String(s.seed, scope.UseCase)) * 0xff51afd7ed558ccd
		h = (h ^ maphash.String(s.seed, scope.Tenant)) * 0xc4ceb9fe1a85ec53
	}
	h ^= h >> 29
	return &s.shards[h&s.mask], uint32(h >> 32)
}

// mix folds the length and the bytes of part into h, 8 bytes at a time: the
// deterministic hash, fast but not keyed.
func mix(h uint64, part string) uint64 {
	h = (h ^ uint64(len(part))) * 0x9e3779b97f4a7c15
	for len(part) >= 8 {
		w := uint64(part[0]) | uint64(part[1])<<8 | uint64(part[2])<<16 | uint64(part[3])<<24 |
			uint64(part[4])<<32 | uint64(part[5])<<40 | uint64(part[6])<<48 | uint64(part[7])<<56
		h = (h ^ w) * 0xff51afd7ed558ccd
		part = part[8:]
	}
	for i := 0; i < len(part); i++ {
		h = (h ^ uint64(part[i])) * 0xc4ceb9fe1a85ec53
	}
	return h
}

// Len is the number of records held.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.used
		sh.mu.Unlock()
	}
	return n
}

// Load implements store.Store.
func (s *Store) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return store.Snapshot{}, err
	}
	sh, hash := s.shard(&scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var snap store.Snapshot
	snap.Now = s.clock()
	snap.FreshToken, _ = sh.read(&scope, hash, &snap.Record)
	return snap, nil
}

// read copies the record of scope into rec (absent: just the scope) and
// hands out a fresh token; it also returns the scope's place. Called with
// sh.mu held. The record's response slices are shared with the store:
// callers must not modify them (store.Store's contract).
func (sh *shard) read(scope *core.Scope, hash uint32, rec *core.Record) (core.Token, place) {
	sh.tokens++
	pl := sh.lookup(scope, hash)
	if pl.slot != nil {
		pl.slot.rec.get(rec)
	} else {
		*rec = core.Record{Scope: *scope}
	}
	return core.Token(sh.tokens<<sh.tokenShift | sh.id), pl
}

// Insert implements store.Store.
func (s *Store) Insert(ctx context.Context, rec *core.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if rec == nil {
		return fmt.Errorf("memstore: insert: no record: %w", core.ErrInvalidRecord)
	}
	sh, hash := s.shard(&rec.Scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	pl := sh.lookup(&rec.Scope, hash)
	if pl.slot != nil {
		return fmt.Errorf("memstore: insert %s: %w", rec.Scope, store.ErrConflict)
	}
	return s.insert(sh, rec, pl)
}

func (s *Store) insert(sh *shard, rec *core.Record, pl place) error {
	if s.recordsMax > 0 && s.records.Add(1) > s.recordsMax {
		s.records.Add(-1)
		return fmt.Errorf("memstore: %d records: %w", s.recordsMax, store.ErrStoreFull)
	}
	sh.put(rec, pl)
	return nil
}

// CompareAndSet implements store.Store.
func (s *Store) CompareAndSet(ctx context.Context, rec *core.Record, expectVersion uint64, expectToken core.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if rec == nil {
		return fmt.Errorf("memstore: compare-and-set: no record: %w", core.ErrInvalidRecord)
	}
	sh, hash := s.shard(&rec.Scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sl := sh.lookup(&rec.Scope, hash).slot
	if !sl.holds(expectVersion, expectToken) {
		return fmt.Errorf("memstore: compare-and-set %s: %w", rec.Scope, store.ErrConflict)
	}
	s.update(sh, sl, rec, true)
	return nil
}

// update writes rec over sl's record. A bounded store counts the records
// that are not tombstones: a record that expires frees its place (it keeps
// no response, and is pruned after its retention), so that a full store
// takes new keys again as soon as its records expire.
func (s *Store) update(sh *shard, sl *slot, rec *core.Record, copyResponse bool) {
	if s.recordsMax > 0 {
		was, is := sl.rec.status == core.StatusExpired, rec.Status == core.StatusExpired
		switch {
		case !was && is:
			s.records.Add(-1)
		case was && !is:
			s.records.Add(1) // a key reused after expiry: it may exceed the bound by the tombstones reused
		}
	}
	sh.update(sl, rec, copyResponse)
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, scope core.Scope, expectVersion uint64, expectToken core.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh, hash := s.shard(&scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	pl := sh.lookup(&scope, hash)
	if !pl.slot.holds(expectVersion, expectToken) {
		return fmt.Errorf("memstore: delete %s: %w", scope, store.ErrConflict)
	}
	s.remove(sh, pl)
	return nil
}

func (s *Store) remove(sh *shard, pl place) {
	if s.recordsMax > 0 && pl.slot.rec.status != core.StatusExpired {
		s.records.Add(-1)
	}
	sh.drop(pl)
}

// Wait implements store.Store: it blocks on Changed's channel, without
// polling.
func (s *Store) Wait(ctx context.Context, scope core.Scope, version uint64, token core.Token) error {
	select {
	case <-s.Changed(scope, version, token):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Changed returns a channel that is closed when the record of scope no
// longer has version and token (it was written, deleted or never was):
// already closed if that is so now. Wait is a select on it and a context;
// a caller that waits on other things too (or drives many waits from one
// goroutine, as the simulator does) selects on it itself.
func (s *Store) Changed(scope core.Scope, version uint64, token core.Token) <-chan struct{} {
	sh, hash := s.shard(&scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sl := sh.lookup(&scope, hash).slot
	if !sl.holds(version, token) {
		return closedChan
	}
	if sl.changed == nil {
		sl.changed = make(chan struct{})
	}
	return sl.changed
}

// closedChan is Changed's answer for a record that changed already.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Apply implements store.Applier: load, core.Step and write under the shard's
// lock, so that concurrent events on one scope never lose a race.
func (s *Store) Apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, a *store.Applied) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh, hash := s.shard(&scope)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	a.Now = s.clock()
	fresh, pl := sh.read(&scope, hash, &a.Record)
	a.Before = a.Record.Status
	ev.Now = a.Now
	if ev.Kind == core.EventReserve {
		ev.Token = fresh
	}
	var res core.Transition
	var err error
	if s.step == nil {
		res, err = core.Step(&a.Record, &ev, p)
	} else {
		sh.stepEvent = ev // a copy the step may not keep (see shard.stepEvent)
		res, err = s.step(&a.Record, &sh.stepEvent, p)
		sh.stepEvent = core.Event{} // keeps no response alive
	}
	if err != nil {
		return err
	}
	a.Transition = res
	switch res.Write.Kind {
	case core.WriteInsert:
		if err := s.insert(sh, &a.Record, pl); err != nil {
			return err
		}
	case core.WriteUpdate:
		// A response that came with the event is the caller's: keep a copy.
		// Any other is the store's own, read back into the record.
		s.update(sh, pl.slot, &a.Record, ev.Response.Body != nil || ev.Response.Headers != nil)
	case core.WriteDelete:
		s.remove(sh, pl)
	}
	return nil
}

// StepFunc implements store.Stepper: the build of the core the store runs,
// nil for the linked core.Step (called directly, so that an event handed to
// a function value does not cost every Apply an allocation).
func (s *Store) StepFunc() core.StepFunc { return s.step }

// ApplyHeld implements store.HeldApplier. Apply already loads, steps and
// writes under one lock, so the held record saves nothing here: it is the
// reference for what a HeldApplier must answer, whatever held is.
func (s *Store) ApplyHeld(ctx context.Context, held *core.Record, ev core.Event, p *core.Policy, a *store.Applied) error {
	return s.Apply(ctx, held.Scope, ev, p, a)
}
