package sim

import (
	"github.com/idemkit/idem/core"
)

// spare is the memory a finished world leaves to the next seed that the
// same goroutine runs (RunSeeds): its per-scope tables, sized by the
// requests of a seed, and its event queue. Taken afresh they were a sixth
// of the bytes a seed of sim-long's settings allocated; reused, a seed only
// clears them. Nothing in a report points into them (run drops the trace's
// scopes), and a world that takes them starts as empty as a new one.
type spare struct {
	shadow   []core.Record
	scopes   []core.Scope
	requests []*request
	scopeIdx map[string]int32
	waiters  [][]*waiter
	books    []scopeBook
	tokens   map[core.Token]int32
	owner    map[core.Fingerprint]core.Fingerprint
	others   []bool
	first    []core.Fingerprint
	ledger   [][]ledgerEntry
	byKey    []*charge
	events   []event
	free     []int32
	near     queue
	far      queue
	slabs    slabs
}

// slabs are the world's requests, attempts and server calls, and the
// bytes and headers of the payloads and responses it copies.
type slabs struct {
	requests slab[request]
	attempts slab[attempt]
	calls    slab[serverCall]
	bytes    arena[byte]
	headers  arena[core.Header]
}

func (s *slabs) reset() {
	s.requests.reset()
	s.attempts.reset()
	s.calls.reset()
	s.bytes.reset()
	s.headers.reset()
}

// bytesOf is a copy of b in s (nil: on the heap).
func (s *slabs) bytesOf(b []byte) []byte {
	var c []byte
	if s == nil {
		c = make([]byte, len(b))
	} else {
		c = s.bytes.take(len(b), 64<<10)
	}
	copy(c, b)
	return c
}

// headerSlice is room for n headers in s (nil: on the heap).
func (s *slabs) headerSlice(n int) []core.Header {
	if s == nil {
		return make([]core.Header, n)
	}
	return s.headers.take(n, 1024)
}

// keep takes what w no longer needs once its report is made.
func (sp *spare) keep(w *world) {
	*sp = spare{
		shadow: w.shadow, scopes: w.scopes, requests: w.requests, scopeIdx: w.scopeIdx, waiters: w.waiters,
		books: w.check.books, tokens: w.check.tokens,
		owner: w.check.payload.owner, others: w.check.payload.others, first: w.check.payload.first,
		ledger: w.gateway.ledger, byKey: w.gateway.byKey,
		events: w.clock.events, free: w.clock.free, near: w.clock.near, far: w.clock.far,
		slabs: w.slabs,
	}
}

// give hands the spare memory to a world about to be initialised; nil
// gives nothing (every table is made).
func (sp *spare) give(w *world) {
	if sp == nil {
		return
	}
	w.shadow, w.scopes, w.requests = emptied(sp.shadow), emptied(sp.scopes), emptied(sp.requests)
	w.scopeIdx, w.waiters = sp.scopeIdx, sp.waiters
	w.check.books, w.check.tokens = sp.books, sp.tokens
	w.check.payload.owner, w.check.payload.others, w.check.payload.first = sp.owner, sp.others, sp.first
	w.gateway.ledger, w.gateway.byKey = sp.ledger, sp.byKey
	w.clock.events, w.clock.free, w.clock.near, w.clock.far = emptied(sp.events), emptied(sp.free), emptied(sp.near), emptied(sp.far)
	w.slabs = sp.slabs
	w.slabs.reset()
	*sp = spare{}
}

// emptied is s with no elements, its array cleared (nothing of the last
// seed stays reachable through it).
func emptied[S ~[]E, E any](s S) S {
	clear(s[:cap(s)])
	return s[:0]
}

// sized is s with n zero elements, its array reused if it has room.
func sized[S ~[]E, E any](s S, n int) S {
	if cap(s) < n {
		return make(S, n)
	}
	clear(s[:cap(s)])
	return s[:n]
}

// cleared is m with no entries, or a new map with room for n.
func cleared[M ~map[K]V, K comparable, V any](m M, n int) M {
	if m == nil {
		return make(M, n)
	}
	clear(m)
	return m
}

// truncated is s with n elements whose own slices are emptied, not freed,
// by reset: the per-scope lists of the last seed lend their arrays.
func truncated[S ~[]E, E any](s S, n int, reset func(*E)) S {
	if cap(s) < n {
		return make(S, n)
	}
	s = s[:n]
	for i := range s {
		reset(&s[i])
	}
	return s
}

// slab hands out zeroed values of T from chunks that a spare keeps for the
// next seed: a world's requests, attempts and server calls live as long as
// the world, so the next seed may write over them all. Taken one by one
// from the heap they were a quarter of a seed's bytes.
type slab[T any] struct {
	chunks [][]T
	used   int // values handed out, over all chunks
}

// slabChunk is how many values a chunk holds.
const slabChunk = 256

func (s *slab[T]) new() *T {
	c, i := s.used/slabChunk, s.used%slabChunk
	if c == len(s.chunks) {
		s.chunks = append(s.chunks, make([]T, slabChunk))
	}
	s.used++
	return &s.chunks[c][i]
}

// reset zeroes every value handed out, for the next seed.
func (s *slab[T]) reset() {
	for c := 0; c*slabChunk < s.used; c++ {
		clear(s.chunks[c][:min(slabChunk, s.used-c*slabChunk)])
	}
	s.used = 0
}

// arena hands out slices of T from chunks that a spare keeps for the next
// seed, not zeroed: a caller writes every element it takes. Each slice has
// the capacity of its length, so that an append never runs into the next.
type arena[T any] struct {
	chunks [][]T
	cur    int // the chunk in use
	off    int // its elements handed out
}

// take returns n elements, from a chunk of chunkLen unless n is more than
// an eighth of one (a large body has an allocation of its own).
func (a *arena[T]) take(n, chunkLen int) []T {
	if n > chunkLen/8 {
		return make([]T, n)
	}
	if len(a.chunks) == 0 || a.off+n > len(a.chunks[a.cur]) {
		if len(a.chunks) > 0 {
			a.cur++
		}
		if a.cur == len(a.chunks) {
			a.chunks = append(a.chunks, make([]T, chunkLen))
		}
		a.off = 0
	}
	s := a.chunks[a.cur][a.off : a.off+n : a.off+n]
	a.off += n
	return s
}

func (a *arena[T]) reset() { a.cur, a.off = 0, 0 }
