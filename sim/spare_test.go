package sim

import (
	"reflect"
	"testing"
)

// TestSpareLeavesNothingBehind: a seed run in the memory another seed left
// (as RunSeeds runs them) reports exactly what it reports run alone, seed
// after seed: nothing of a finished world reaches the next one.
func TestSpareLeavesNothingBehind(t *testing.T) {
	cfg := ConfigDefault()
	cfg.LinCheck = false
	var sp spare
	for seed := uint64(1); seed <= 12; seed++ {
		cfg.Seed = seed
		alone := run(cfg, false)
		alone.Events, alone.Scopes = nil, nil
		reused := runFrom(cfg, false, &sp)
		if !reflect.DeepEqual(alone, reused) {
			t.Fatalf("seed %d: run after seed %d in its memory, the report differs:\n%+v\nwant\n%+v", seed, seed-1, reused, alone)
		}
		if sp.shadow == nil || sp.books == nil || sp.events == nil {
			t.Fatalf("seed %d left no memory to the next", seed)
		}
	}
}

// TestSpareStartsEmpty: a world made in the memory of a finished one has
// every table as a new world has it: sized for the seed, and empty.
func TestSpareStartsEmpty(t *testing.T) {
	cfg := ConfigDefault()
	cfg.LinCheck = false
	var sp spare
	runFrom(cfg, false, &sp)
	if len(sp.books) == 0 || len(sp.requests) == 0 {
		t.Fatal("the run left no memory to reuse")
	}
	if sp.slabs.calls.used == 0 || sp.slabs.requests.used != cfg.Requests {
		t.Fatalf("the run made %d server calls and %d requests in its slabs", sp.slabs.calls.used, sp.slabs.requests.used)
	}
	w, fresh := newWorldFrom(cfg, false, &sp), newWorld(cfg, false)
	zeroed(t, "requests", &w.slabs.requests)
	zeroed(t, "attempts", &w.slabs.attempts)
	zeroed(t, "server calls", &w.slabs.calls)
	empty := map[string]int{
		"shadow": len(w.shadow), "scopes": len(w.scopes), "requests": len(w.requests), "scopeIdx": len(w.scopeIdx),
		"tokens": len(w.check.tokens), "owner": len(w.check.payload.owner),
	}
	for name, n := range empty {
		if n != 0 {
			t.Errorf("%s holds %d entries of the last seed", name, n)
		}
	}
	if cap(w.shadow) < cfg.Requests {
		t.Errorf("shadow has room for %d records, want %d", cap(w.shadow), cfg.Requests)
	}
	sizes := map[string][2]int{
		"waiters": {len(w.waiters), len(fresh.waiters)}, "books": {len(w.check.books), len(fresh.check.books)},
		"others": {len(w.check.payload.others), len(fresh.check.payload.others)}, "first": {len(w.check.payload.first), len(fresh.check.payload.first)},
		"ledger": {len(w.gateway.ledger), len(fresh.gateway.ledger)}, "byKey": {len(w.gateway.byKey), len(fresh.gateway.byKey)},
		"events": {len(w.clock.events), len(fresh.clock.events)}, "free": {len(w.clock.free), len(fresh.clock.free)},
		"near": {len(w.clock.near), len(fresh.clock.near)}, "far": {len(w.clock.far), len(fresh.clock.far)},
	}
	for name, n := range sizes {
		if n[0] != n[1] {
			t.Errorf("%s has %d elements, a new world %d", name, n[0], n[1])
		}
	}
	for i := range w.check.books {
		if b := &w.check.books[i]; len(b.granted) != 0 || len(b.lives) != 0 || b.everEffect {
			t.Fatalf("scope %d's book holds the last seed's: %+v", i, *b)
		}
		if len(w.gateway.ledger[i]) != 0 || w.gateway.byKey[i] != nil || w.waiters[i] != nil {
			t.Fatalf("scope %d's ledger or waiters hold the last seed's", i)
		}
		if w.check.payload.others[i] || !w.check.payload.first[i].IsZero() {
			t.Fatalf("scope %d's payload checks hold the last seed's", i)
		}
	}
}

// zeroed fails t unless s hands out nothing yet and every value in its
// chunks is zero.
func zeroed[T any](t *testing.T, name string, s *slab[T]) {
	t.Helper()
	if s.used != 0 {
		t.Errorf("the %s slab counts %d values of the last seed", name, s.used)
	}
	for c := range s.chunks {
		for i := range s.chunks[c] {
			if !reflect.ValueOf(&s.chunks[c][i]).Elem().IsZero() {
				t.Fatalf("the %s slab holds a value of the last seed at %d", name, c*slabChunk+i)
			}
		}
	}
}

// TestArenaSlicesAreTheirOwn: the slices an arena hands out never overlap,
// an append to one never writes into the next, a large one is not in a
// chunk, and after a reset the chunks are handed out again from the start.
func TestArenaSlicesAreTheirOwn(t *testing.T) {
	var a arena[byte]
	const chunk = 64
	var got [][]byte
	for i := range 40 {
		s := a.take(i%8, chunk)
		if len(s) != i%8 || cap(s) != i%8 {
			t.Fatalf("take(%d): len %d cap %d", i%8, len(s), cap(s))
		}
		for j := range s {
			s[j] = byte(i)
		}
		got = append(got, s)
	}
	_ = append(got[3], 0xff, 0xff) // must reallocate, not write into got[4]
	for i, s := range got {
		for _, b := range s {
			if b != byte(i) {
				t.Fatalf("slice %d was overwritten: %v", i, s)
			}
		}
	}
	if len(a.chunks) < 2 {
		t.Fatalf("40 slices of up to 7 bytes fit in %d chunks of %d", len(a.chunks), chunk)
	}
	large := a.take(chunk/8+1, chunk)
	for _, c := range a.chunks {
		if &c[0] == &large[0] {
			t.Fatal("a large slice was taken from a chunk")
		}
	}
	chunks := len(a.chunks)
	a.reset()
	if s := a.take(5, chunk); &s[0] != &a.chunks[0][0] || len(a.chunks) != chunks {
		t.Fatal("after a reset the arena did not start again at its first chunk")
	}
}
