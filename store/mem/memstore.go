// Package memstore is the reference Store: in memory, linearizable, safe for
// concurrent use, sharded so that cores do not contend on one lock. Waiters
// are woken when their record changes. It keeps nothing across restarts: use
// it for tests, the simulator, and single-process services that accept that.
package memstore

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"sync"
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
	// RecordsMax bounds the number of records; 0 (or less) means no bound. A full
	// store refuses new records with store.ErrStoreFull: it never evicts a
	// live record to make room.
	RecordsMax int
	// Shards is the number of independently locked parts, rounded up to a
	// power of two (64 if zero or less) and at most ShardsMax.
	Shards int
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
	// records counts the records of a bounded store only: one counter
	// shared by every core would cost an unbounded store its scaling.
	records atomic.Int64
}

type shard struct {
	mu sync.Mutex
	// index finds a record's slot from its scope: open addressing with
	// linear probing over entries that hold no pointers (the garbage
	// collector never scans it) and keep the part of the hash the position
	// comes from, so that growing never hashes a scope again. The hash is
	// computed once per call (it also picks the shard; see Store.shard).
	index []entry
	used  int
	// chunks hold the slots, slotsPerChunk at a time, which saves the
	// allocator and the garbage collector most of their work per record;
	// a slot's number is its place in them. free holds the numbers of
	// slots of deleted records.
	chunks []*[slotsPerChunk]slot
	free   []uint32
	// tokens only grows: every Load hands out the next one, so a token is
	// never repeated for any scope of the shard, deleted records included.
	// A token is tokens above the shard's number (id, in the low tokenShift
	// bits), so that no two scopes of the store ever hold the same token.
	tokens     uint64
	id         uint64
	tokenShift uint
	// nextDue is, per store.DueKind, a time no record of the shard becomes
	// due before (a lower bound, lowered by every write, made exact by every
	// scan), so that Due skips the shards with nothing due.
	nextDue [2]int64
	_       [64]byte // keep neighbouring shards' locks off one cache line
}

// entry is one place of a shard's index: the high half of the scope's hash,
// and the number of the slot plus one (zero: the place is empty).
type entry struct {
	hash uint32
	slot uint32
}

// slot holds one record and the channel its waiters block on (closed by the
// next write). The record is kept compact (times as Unix nanoseconds): half
// the bytes of a core.Record, which is what the garbage collector pays for,
// per record and per write. A free slot has status absent.
type slot struct {
	rec     compact
	changed chan struct{}
}

type compact struct {
	scope                                                    core.Scope
	fingerprint                                              core.Fingerprint
	token                                                    core.Token
	version                                                  uint64
	headers                                                  []core.Header
	body                                                     []byte
	lastErrorCode                                            string
	lockedUntil, reconcileAfter, created, completed, expires int64
	statusCode                                               int32
	schemaVersion, reconcileAttempts                         uint32
	status                                                   core.Status
}

// zeroTime stands for time.Time{} in a compact record.
const zeroTime = math.MinInt64

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return zeroTime
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == zeroTime {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// set stores r; the response's slices are copied when copyResponse is set.
func (c *compact) set(r *core.Record, copyResponse bool) {
	c.scope = r.Scope
	c.status = r.Status
	c.fingerprint = r.Fingerprint
	c.token = r.Token
	c.version = r.Version
	c.statusCode = int32(r.Response.StatusCode)
	c.schemaVersion = r.Response.SchemaVersion
	c.headers, c.body = r.Response.Headers, r.Response.Body
	if copyResponse {
		resp := r.Response.Clone()
		c.headers, c.body = resp.Headers, resp.Body
	}
	c.lastErrorCode = r.LastErrorCode
	c.lockedUntil = nanos(r.LockedUntil)
	c.reconcileAfter = nanos(r.ReconcileAfter)
	c.reconcileAttempts = r.ReconcileAttempts
	c.created = nanos(r.CreatedAt)
	c.completed = nanos(r.CompletedAt)
	c.expires = nanos(r.ExpiresAt)
}

// get returns the record. Its response shares the store's slices.
func (c *compact) get(r *core.Record) {
	*r = core.Record{
		Scope:             c.scope,
		Status:            c.status,
		Fingerprint:       c.fingerprint,
		Token:             c.token,
		Version:           c.version,
		Response:          core.Response{StatusCode: int(c.statusCode), Headers: c.headers, Body: c.body, SchemaVersion: c.schemaVersion},
		LastErrorCode:     c.lastErrorCode,
		LockedUntil:       fromNanos(c.lockedUntil),
		ReconcileAfter:    fromNanos(c.reconcileAfter),
		ReconcileAttempts: c.reconcileAttempts,
		CreatedAt:         fromNanos(c.created),
		CompletedAt:       fromNanos(c.completed),
		ExpiresAt:         fromNanos(c.expires),
	}
}

// place is where a scope is, or would go, in its shard.
type place struct {
	hash uint32 // the high half of the scope's hash
	at   int    // the index position: the scope's entry, or the empty one it would take
	slot *slot  // the scope's slot, or nil when it has no record
}

// lookup finds the scope's place. Called with sh.mu held.
func (sh *shard) lookup(scope *core.Scope, hash uint32) place {
	if len(sh.index) == 0 {
		return place{hash: hash, at: -1}
	}
	mask := len(sh.index) - 1
	for i := int(hash) & mask; ; i = (i + 1) & mask {
		e := sh.index[i]
		if e.slot == 0 {
			return place{hash: hash, at: i}
		}
		if e.hash == hash {
			if sl := sh.slot(e.slot - 1); sl.rec.scope == *scope {
				return place{hash: hash, at: i, slot: sl}
			}
		}
	}
}

func (sh *shard) slot(n uint32) *slot { return &sh.chunks[n/slotsPerChunk][n%slotsPerChunk] }

// holds reports whether sl is a record with version and token: the
// precondition of every write. A nil sl holds nothing.
func (sl *slot) holds(version uint64, token core.Token) bool {
	return sl != nil && sl.rec.version == version && sl.rec.token == token
}

// update writes rec over sl's record (copying the response when
// copyResponse is set) and wakes its waiters. Called with sh.mu held.
func (sh *shard) update(sl *slot, rec *core.Record, copyResponse bool) {
	sl.rec.set(rec, copyResponse)
	sh.noteDue(&sl.rec)
	sl.wake()
}

// wake releases everyone waiting on sl. Called with the shard's lock held.
func (sl *slot) wake() {
	if sl.changed != nil {
		close(sl.changed)
		sl.changed = nil
	}
}

const (
	slotsPerChunk = 32
	indexLenMin   = 16
)

// put adds rec, whose scope has no record, at pl, its place from lookup.
// Called with sh.mu held.
func (sh *shard) put(rec *core.Record, pl place) {
	if pl.at < 0 || (sh.used+1)*8 > len(sh.index)*7 {
		sh.grow()
		pl = sh.lookup(&rec.Scope, pl.hash)
	}
	if len(sh.free) == 0 {
		n := uint32(len(sh.chunks)) * slotsPerChunk
		sh.chunks = append(sh.chunks, new([slotsPerChunk]slot))
		for i := uint32(slotsPerChunk); i > 0; i-- {
			sh.free = append(sh.free, n+i-1)
		}
	}
	n := sh.free[len(sh.free)-1]
	sh.free = sh.free[:len(sh.free)-1]
	sl := sh.slot(n)
	sl.rec.set(rec, true)
	sh.index[pl.at] = entry{hash: pl.hash, slot: n + 1}
	sh.used++
	sh.noteDue(&sl.rec)
}

// grow doubles the index (or makes the first one), placing every entry
// again from the hash it keeps.
func (sh *shard) grow() {
	old := sh.index
	sh.index = make([]entry, max(indexLenMin, 2*len(old)))
	mask := len(sh.index) - 1
	for _, e := range old {
		if e.slot == 0 {
			continue
		}
		i := int(e.hash) & mask
		for sh.index[i].slot != 0 {
			i = (i + 1) & mask
		}
		sh.index[i] = e
	}
}

// noteDue lowers the shard's due bounds for a record just written.
func (sh *shard) noteDue(c *compact) {
	for k := range sh.nextDue {
		if at, ok := c.dueAt(store.DueKind(k + 1)); ok && at < sh.nextDue[k] {
			sh.nextDue[k] = at
		}
	}
}

// drop removes the record at pl, wakes its waiters and frees its slot. The
// entries after it in its run move back to close the gap, so that lookups
// never need markers of deleted entries. Called with sh.mu held.
func (sh *shard) drop(pl place) {
	sl := sh.slot(sh.index[pl.at].slot - 1)
	sl.wake()
	*sl = slot{} // keep no references alive
	sh.free = append(sh.free, sh.index[pl.at].slot-1)
	sh.used--
	mask := len(sh.index) - 1
	gap := pl.at
	sh.index[gap] = entry{}
	for j := (gap + 1) & mask; sh.index[j].slot != 0; j = (j + 1) & mask {
		// The entry at j may fill the gap unless its home lies cyclically
		// in (gap, j]: moving it before its home would hide it from lookups.
		home := int(sh.index[j].hash) & mask
		if (j-home)&mask >= (j-gap)&mask {
			sh.index[gap] = sh.index[j]
			sh.index[j] = entry{}
			gap = j
		}
	}
}

var _ store.Store = (*Store)(nil)
var _ store.Applier = (*Store)(nil)

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
		clock: o.Clock, recordsMax: int64(o.RecordsMax)}
	if s.clock == nil {
		// Wall time carried forward by the monotonic clock: it never steps
		// back (leases stay sound if the system clock is set back), and it
		// costs one clock read instead of time.Now's two.
		start := time.Now()
		s.clock = func() time.Time { return start.Add(time.Since(start)) }
	}
	for i := range s.shards {
		s.shards[i].nextDue = [2]int64{math.MaxInt64, math.MaxInt64}
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
	sh.update(sl, rec, true)
	return nil
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
	sh.drop(pl)
	if s.recordsMax > 0 {
		s.records.Add(-1)
	}
}

// Wait implements store.Store: it blocks on a channel closed by the next
// write to scope, without polling.
func (s *Store) Wait(ctx context.Context, scope core.Scope, version uint64, token core.Token) error {
	sh, hash := s.shard(&scope)
	sh.mu.Lock()
	sl := sh.lookup(&scope, hash).slot
	if !sl.holds(version, token) {
		sh.mu.Unlock()
		return nil
	}
	if sl.changed == nil {
		sl.changed = make(chan struct{})
	}
	ch := sl.changed
	sh.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Due implements store.Store. It scans every shard: fine for a reference
// driver, and the order (most overdue first, then by scope) is
// deterministic, which the simulator needs.
func (s *Store) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	if kind != store.DueSweep && kind != store.DueReconcile {
		return nil, fmt.Errorf("memstore: due: unknown kind %v", kind)
	}
	now := s.clock().UnixNano()
	k := int(kind - 1)
	type due struct {
		at  int64
		rec core.Record
	}
	var found []due
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		if sh.nextDue[k] > now {
			sh.mu.Unlock()
			continue
		}
		next := int64(math.MaxInt64)
		for _, chunk := range sh.chunks {
			for j := range chunk {
				sl := &chunk[j]
				at, ok := sl.rec.dueAt(kind)
				if !ok {
					continue
				}
				next = min(next, at)
				if at <= now {
					d := due{at: at}
					sl.rec.get(&d.rec)
					found = append(found, d)
				}
			}
		}
		sh.nextDue[k] = next
		sh.mu.Unlock()
	}
	slices.SortFunc(found, func(a, b due) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		x, y := &a.rec.Scope, &b.rec.Scope
		return cmp.Or(cmp.Compare(x.Tenant, y.Tenant), cmp.Compare(x.Principal, y.Principal),
			cmp.Compare(x.UseCase, y.UseCase), cmp.Compare(x.Key, y.Key))
	})
	out := make([]core.Record, 0, min(limit, len(found)))
	for i := 0; i < len(found) && i < limit; i++ {
		out = append(out, found[i].rec)
	}
	return out, nil
}

// dueAt is when the record becomes due for kind, if ever.
func (c *compact) dueAt(kind store.DueKind) (int64, bool) {
	switch {
	case kind == store.DueSweep && c.status == core.StatusInProgress:
		return c.lockedUntil, true
	case kind == store.DueSweep && (c.status == core.StatusCompleted || c.status == core.StatusFailedRetryable):
		return c.expires, true
	case kind == store.DueReconcile && c.status == core.StatusUnknown && c.reconcileAfter != zeroTime:
		return c.reconcileAfter, true
	}
	return 0, false
}

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
	res, err := core.Step(&a.Record, &ev, p)
	if err != nil {
		return err
	}
	a.Result = res
	switch res.Write.Kind {
	case core.WriteInsert:
		if err := s.insert(sh, &a.Record, pl); err != nil {
			return err
		}
	case core.WriteUpdate:
		// A response that came with the event is the caller's: keep a copy.
		// Any other is the store's own, read back into the record.
		sh.update(pl.slot, &a.Record, ev.Response.Body != nil || ev.Response.Headers != nil)
	case core.WriteDelete:
		s.remove(sh, pl)
	}
	return nil
}
