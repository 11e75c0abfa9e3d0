package storetest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idem/linearizability"

	"github.com/anishathalye/porcupine"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// toyStore is the memory driver's logic in its simplest form (one lock, one
// map, one token counter), with switches that each plant one bug. With no
// switch on it is correct, which TestToyStoreIsLinearizable shows, so that
// each failure below is the planted bug's.
type toyStore struct {
	mu      sync.Mutex
	records map[core.Scope]*toyEntry
	tokens  uint64
	writes  int

	casIgnoresVersion    bool // lost update: compare-and-set checks the token only
	deleteIgnoresVersion bool // delete checks the token only
	racyInsert           bool // insert-if-absent as check, unlock, then put
	staleReads           bool // loads served from a cache that writes do not invalidate
	dropAcknowledged     bool // every 5th write is acknowledged, then lost at the next load
	casAcceptsNewer      bool // compare-and-set also applies under an expected version past the record's
	tokensPerScope       bool // fresh tokens counted from the scope's record: after a delete they start again

	cache map[core.Scope]*cached
}

type toyEntry struct {
	rec  core.Record
	prev *core.Record // the record before an acknowledged write that will be lost
	gone bool         // the lost write was an insert: the record goes too
}

type cached struct {
	rec  core.Record
	hits int
}

func newToy() *toyStore {
	return &toyStore{records: map[core.Scope]*toyEntry{}, cache: map[core.Scope]*cached{}}
}

var _ store.Store = (*toyStore)(nil)

func (s *toyStore) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return store.Snapshot{}, err
	}
	if s.planted() {
		// Yield once the lock is released (defers run last first): other
		// goroutines then write between this load and the caller's write,
		// the window every planted bug needs, far more often.
		defer runtime.Gosched()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens++
	snap := store.Snapshot{Now: time.Now(), FreshToken: core.Token(s.tokens), Record: core.Record{Scope: scope}}
	if s.staleReads {
		if c, ok := s.cache[scope]; ok && c.hits < 3 {
			c.hits++
			snap.Record = c.rec
			return snap, nil
		}
	}
	if e, ok := s.records[scope]; ok {
		if e.prev != nil { // the unsynced write is lost
			if e.gone {
				delete(s.records, scope)
			} else {
				e.rec, e.prev = *e.prev, nil
			}
		}
	}
	if e, ok := s.records[scope]; ok {
		snap.Record = e.rec
	}
	if s.tokensPerScope {
		snap.FreshToken = snap.Record.Token + 1
	}
	if s.staleReads {
		s.cache[scope] = &cached{rec: snap.Record}
	}
	return snap, nil
}

// planted reports whether a bug is planted.
func (s *toyStore) planted() bool {
	return s.casIgnoresVersion || s.deleteIgnoresVersion || s.racyInsert || s.staleReads || s.dropAcknowledged
}

// ack reports whether the write just acknowledged is to be lost later.
func (s *toyStore) lose() bool {
	s.writes++
	return s.dropAcknowledged && s.writes%5 == 0
}

func (s *toyStore) Insert(ctx context.Context, rec *core.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	_, exists := s.records[rec.Scope]
	if s.racyInsert && !exists {
		s.mu.Unlock()
		runtime.Gosched()
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if exists {
		return fmt.Errorf("toy: insert: %w", store.ErrConflict)
	}
	e := &toyEntry{rec: *rec}
	e.rec.Response = rec.Response.Clone()
	if s.lose() {
		e.prev, e.gone = &core.Record{}, true
	}
	s.records[rec.Scope] = e
	return nil
}

func (s *toyStore) CompareAndSet(ctx context.Context, rec *core.Record, v uint64, t core.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.records[rec.Scope]
	if !ok || e.rec.Token != t || (e.rec.Version != v && !s.casIgnoresVersion && !(s.casAcceptsNewer && v > e.rec.Version)) {
		return fmt.Errorf("toy: compare-and-set: %w", store.ErrConflict)
	}
	prev := e.rec
	e.rec = *rec
	e.rec.Response = rec.Response.Clone()
	if s.lose() {
		e.prev = &prev
	}
	return nil
}

func (s *toyStore) Delete(ctx context.Context, scope core.Scope, v uint64, t core.Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.records[scope]
	if !ok || e.rec.Token != t || (e.rec.Version != v && !s.deleteIgnoresVersion) {
		return fmt.Errorf("toy: delete: %w", store.ErrConflict)
	}
	delete(s.records, scope)
	return nil
}

func (s *toyStore) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	return nil, ctx.Err()
}

func (s *toyStore) Wait(ctx context.Context, scope core.Scope, version uint64, token core.Token) error {
	return store.PollWait(ctx, s, scope, version, token, 100*time.Microsecond)
}

// hunt records and checks store histories of s, as the suite's stress/store
// does, until one is not Ok or histories have passed.
func hunt(t *testing.T, s store.Store, histories int, dir string) (linearizability.Report, int) {
	t.Helper()
	cfg := defaults()
	cfg.seed = randomSeed()
	t.Logf("seed %d", cfg.seed)
	for h := range histories {
		spec := newHistorySpec(&cfg, "broken", h, 2)
		out, err := stressStore(context.Background(), s, spec)
		if err != nil {
			t.Fatal(err)
		}
		r := linearizability.CheckStoreHistory(out.store, linearizability.CheckOptions{Timeout: cfg.checkTimeout, VisualizationDir: dir, Name: t.Name()})
		if !r.OK() {
			return r, h
		}
	}
	return linearizability.Report{Check: porcupine.Ok}, histories
}

func TestToyStoreIsLinearizable(t *testing.T) {
	r, h := hunt(t, newToy(), 30, t.TempDir())
	if !r.OK() {
		t.Fatalf("the toy store without a planted bug failed history %d: %v", h, r)
	}
}

var plants = []struct {
	name  string
	plant func(*toyStore)
}{
	{"lost-update", func(s *toyStore) { s.casIgnoresVersion = true }},
	{"non-atomic-insert", func(s *toyStore) { s.racyInsert = true }},
	{"stale-read", func(s *toyStore) { s.staleReads = true }},
	{"delete-without-version", func(s *toyStore) { s.deleteIgnoresVersion = true }},
	{"acknowledged-then-dropped", func(s *toyStore) { s.dropAcknowledged = true }},
}

// TestBrokenDriversAreIllegal plants one bug at a time and requires
// porcupine's Illegal result: not Unknown, not a failed functional test.
func TestBrokenDriversAreIllegal(t *testing.T) {
	for _, c := range plants {
		t.Run(c.name, func(t *testing.T) {
			s := newToy()
			c.plant(s)
			dir := t.TempDir()
			r, h := hunt(t, s, 50, dir)
			if r.Check != porcupine.Illegal {
				t.Fatalf("after %d histories: %v, want %v", h+1, r, porcupine.Illegal)
			}
			t.Logf("caught in history %d: %v", h, r)
			html, err := os.ReadFile(r.Visualization)
			if err != nil {
				t.Fatalf("visualization: %v", err)
			}
			if len(r.Offending) == 0 || !strings.Contains(string(html), "load → ") {
				t.Fatalf("the visualization does not describe the operations (%d bytes)", len(html))
			}
		})
	}
}

// TestLifecycleModelCatchesBrokenDrivers: the same bugs, seen only through
// the events applied over the driver (load, core.Step, compare-and-set), are
// caught by the lifecycle model alone: its store calls are not checked here.
func TestLifecycleModelCatchesBrokenDrivers(t *testing.T) {
	cfg := defaults()
	cfg.seed = randomSeed()
	t.Logf("seed %d", cfg.seed)
	for _, c := range plants {
		t.Run(c.name, func(t *testing.T) {
			s := newToy()
			c.plant(s)
			for h := range 300 {
				spec := newHistorySpec(&cfg, "lifecycle-"+c.name, h, 2)
				spec.tune = func(p *core.Policy) {
					// Deletes on every path (fail, expiry), so that a delete
					// that ignores its version meets a concurrent update.
					p.Fail, p.Expiry = core.FailEvict, core.ExpiryHard
				}
				out, err := stressLifecycle(context.Background(), s, spec)
				if err != nil {
					t.Fatal(err)
				}
				r := linearizability.CheckLifecycleHistory(out.life, out.policy, linearizability.CheckOptions{Timeout: cfg.checkTimeout, VisualizationDir: t.TempDir()})
				if r.OK() {
					continue
				}
				if r.Check != porcupine.Illegal {
					t.Fatalf("history %d: %v, want %v", h, r, porcupine.Illegal)
				}
				t.Logf("caught in history %d: %s", h, strings.SplitN(r.String(), "\n", 2)[0])
				return
			}
			t.Fatal("not caught in 300 histories")
		})
	}
}

// auditsEverything keeps an audit for every settlement it is asked for,
// whether the event wrote or not (a stale token, a record in progress).
type auditsEverything struct {
	store.Store
	trail []store.Audit
}

func (s *auditsEverything) ApplyAudited(ctx context.Context, ev core.Event, p *core.Policy, a *store.Audit, out *store.Applied) error {
	if err := a.Validate(); err != nil {
		return err
	}
	if err := store.Apply(ctx, s.Store, a.Scope, ev, p, out); err != nil {
		return err
	}
	a.At, a.Version, a.Decision = out.Now, out.Record.Version, out.Transition.Decision.Kind
	s.trail = append(s.trail, *a)
	return nil
}

func (s *auditsEverything) Audits(_ context.Context, scope core.Scope) ([]store.Audit, error) {
	var out []store.Audit
	for _, a := range s.trail {
		if a.Scope == scope {
			out = append(out, a)
		}
	}
	return out, nil
}
