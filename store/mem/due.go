package memstore

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// dueEntry says that the record in slot, as of its version (and token),
// becomes due for one kind at at. A later write makes it stale: the record
// then has another version, and the write adds an entry of its own.
type dueEntry struct {
	at      int64
	token   core.Token
	version uint64
	slot    uint32
}

func (e *dueEntry) before(o *dueEntry) bool {
	return e.at < o.at || e.at == o.at && e.slot < o.slot
}

// dueIndex lists a shard's records by the time they become due for one
// kind, so that a batch of Due costs about the batch, not the shard. Writes
// only append to pending (the request path pays a slice append); Due moves
// pending into the heap, a min-heap by (at, slot), and takes its top. Stale
// entries are dropped when they come to the top, and both are compacted
// when they outgrow the shard's records, so that memory stays bounded
// without a sweeper.
type dueIndex struct {
	heap    []dueEntry
	pending []dueEntry
	// pendingFirst is the earliest at in pending (math.MaxInt64: none).
	pendingFirst int64
	// first is the earliest at of any entry, stale ones included
	// (math.MaxInt64: none), written under the shard's lock: Due reads it
	// without the lock and skips a shard with nothing due yet, so that a
	// batch takes the locks of only the shards it has work in.
	first atomic.Int64
}

// noteFirst sets first after the heap or pending changed (under the
// shard's lock).
func (d *dueIndex) noteFirst() {
	f := d.pendingFirst
	if len(d.heap) > 0 {
		f = min(f, d.heap[0].at)
	}
	d.first.Store(f)
}

// entriesMax is how many entries an index may hold for a shard of n
// records before it is compacted: every record has at most one live entry
// per kind.
func entriesMax(n int) int { return 2*n + 1024 }

// noteDue adds the due entries of the record just written in sl.
func (sh *shard) noteDue(sl *slot) {
	for k := range sh.due {
		at, ok := sl.rec.dueAt(store.DueKind(k + 1))
		if !ok {
			continue
		}
		d := &sh.due[k]
		if len(d.pending) == 0 {
			d.pendingFirst = math.MaxInt64
		}
		d.pending = append(d.pending, dueEntry{at: at, token: sl.rec.token, version: sl.rec.version, slot: sl.num})
		if at < d.pendingFirst {
			d.pendingFirst = at
			d.noteFirst()
		}
		if len(d.pending) > entriesMax(sh.used) {
			sh.absorb(k)
		}
	}
}

// live reports whether e is the entry of a record as it is now.
func (sh *shard) live(k int, e *dueEntry) bool {
	sl := sh.slot(e.slot)
	if sl.rec.status == core.StatusAbsent || sl.rec.token != e.token || sl.rec.version != e.version {
		return false
	}
	at, ok := sl.rec.dueAt(store.DueKind(k + 1))
	return ok && at == e.at
}

// absorb moves the live pending entries of kind k into the heap, compacting
// the heap first if stale entries have made it outgrow the shard.
func (sh *shard) absorb(k int) {
	d := &sh.due[k]
	if len(d.heap)+len(d.pending) > entriesMax(sh.used) {
		live := d.heap[:0]
		for i := range d.heap {
			if sh.live(k, &d.heap[i]) {
				live = append(live, d.heap[i])
			}
		}
		d.heap = live
		for i := len(d.heap)/2 - 1; i >= 0; i-- {
			d.down(i)
		}
	}
	for i := range d.pending {
		if sh.live(k, &d.pending[i]) {
			d.push(d.pending[i])
		}
	}
	d.pending = d.pending[:0]
	d.pendingFirst = math.MaxInt64
	d.noteFirst()
}

func (d *dueIndex) push(e dueEntry) {
	d.heap = append(d.heap, e)
	h := d.heap
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (d *dueIndex) pop() dueEntry {
	h := d.heap
	top := h[0]
	h[0] = h[len(h)-1]
	d.heap = h[:len(h)-1]
	d.down(0)
	return top
}

func (d *dueIndex) down(i int) {
	h := d.heap
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1].before(&h[c]) {
			c++
		}
		if !h[c].before(&h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// due is one record Due may list, with the time it became due.
type due struct {
	at  int64
	rec core.Record
}

// after reports whether d comes after o in Due's order: most overdue
// first, then by scope.
func (d *due) after(o *due) bool {
	if d.at != o.at {
		return d.at > o.at
	}
	x, y := &d.rec.Scope, &o.rec.Scope
	return cmp.Or(cmp.Compare(x.Tenant, y.Tenant), cmp.Compare(x.Principal, y.Principal),
		cmp.Compare(x.UseCase, y.UseCase), cmp.Compare(x.Key, y.Key)) > 0
}

// dueTop keeps the first limit records of Due's order among those offered:
// a max-heap, whose top is the last of them, so that a shard stops giving
// records as soon as its next one comes after everything kept.
type dueTop struct {
	limit int
	heap  []due
	kept  []dueEntry // scratch: the entries a shard gave, to put back
}

func (t *dueTop) full() bool { return len(t.heap) == t.limit }

// dueTops are the heaps of finished Dues, to use again: a batch's heap of
// record copies was the store's largest allocation after the records
// themselves (a sweeper and a reconciler call Due several times a second).
var dueTops = sync.Pool{New: func() any { return new(dueTop) }}

// dueTopKeptMax is the most entries a heap may have room for and still be
// kept for another Due: a rare large batch should not pin its memory.
const dueTopKeptMax = 1024

// release gives t back to dueTops, holding no record.
func (t *dueTop) release() {
	if cap(t.heap) > dueTopKeptMax || cap(t.kept) > dueTopKeptMax {
		return
	}
	clear(t.heap) // no response or scope stays alive through the pool
	t.heap, t.kept = t.heap[:0], t.kept[:0]
	dueTops.Put(t)
}

// offer adds d if it is among the first limit.
func (t *dueTop) offer(d *due) {
	if t.full() {
		if d.after(&t.heap[0]) {
			return
		}
		t.heap[0] = *d
		t.down(0)
		return
	}
	t.heap = append(t.heap, *d)
	h := t.heap
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].after(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (t *dueTop) down(i int) {
	h := t.heap
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1].after(&h[c]) {
			c++
		}
		if !h[c].after(&h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// takeDue offers top the live records of the shard due for kind k at now,
// most overdue first, until one comes after everything top keeps, and
// leaves them listed: Due is a hint, and a record nobody writes stays due.
func (sh *shard) takeDue(k int, now int64, top *dueTop) {
	sh.absorb(k)
	d := &sh.due[k]
	top.kept = top.kept[:0]
	for len(d.heap) > 0 && d.heap[0].at <= now && len(top.kept) < top.limit {
		if top.full() && d.heap[0].at > top.heap[0].at {
			break // this shard's next comes after everything kept
		}
		e := d.pop()
		if !sh.live(k, &e) {
			continue // stale: a later write has its own entry
		}
		top.kept = append(top.kept, e)
		var r due
		r.at = e.at
		sh.slot(e.slot).rec.get(&r.rec)
		top.offer(&r)
	}
	for _, e := range top.kept {
		d.push(e)
	}
	d.noteFirst()
}

// Due implements store.Store. It asks each shard's index for its most
// overdue records, keeping only the first limit over all of them, in an
// order (most overdue first, then by scope) that is deterministic, which
// the simulator needs. A batch costs about the batch, whatever the store
// holds.
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
	top := dueTops.Get().(*dueTop)
	defer top.release()
	top.limit = limit
	for i := range s.shards {
		sh := &s.shards[i]
		if sh.due[k].first.Load() > now {
			continue // nothing due in this shard yet
		}
		sh.mu.Lock()
		sh.takeDue(k, now, top)
		sh.mu.Unlock()
	}
	slices.SortFunc(top.heap, func(a, b due) int {
		if a.after(&b) {
			return 1
		}
		if b.after(&a) {
			return -1
		}
		return 0
	})
	out := make([]core.Record, len(top.heap))
	for i := range top.heap {
		out[i] = top.heap[i].rec
	}
	return out, nil
}
