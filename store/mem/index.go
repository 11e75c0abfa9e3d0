package memstore

import (
	"sync"

	"github.com/idemkit/idem/core"
)

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
	// due indexes the records by when they become due, per store.DueKind
	// (due.go).
	due [2]dueIndex
	// stepEvent is the copy of an Apply's event handed to Options.Step
	// (under mu): a function value makes its argument escape, and a copy
	// on the stack would then be an allocation at every Apply.
	stepEvent core.Event
	_         [64]byte // keep neighbouring shards' locks off one cache line
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
	num     uint32 // the slot's own number, for the due index
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
	sh.noteDue(sl)
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
	sl.num = n
	sh.index[pl.at] = entry{hash: pl.hash, slot: n + 1}
	sh.used++
	sh.noteDue(sl)
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
