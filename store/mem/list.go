package memstore

import (
	"context"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

var _ store.Lister = (*Store)(nil)

// List returns the records q selects, oldest first (store.Lister). It reads
// every shard: it is an operator's view, not a request's.
func (s *Store) List(ctx context.Context, q store.ListQuery) ([]core.Record, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []core.Record
	s.eachRecord(func(r *core.Record) {
		if q.Matches(r) && (q.After == nil || !q.After.Before(r)) {
			out = append(out, *r)
			out[len(out)-1].Response = r.Response.Clone() // the store's slices stay its own
		}
	})
	return q.Page(out), nil // sorted, and cut to the limit
}

// Stats counts the records per status and each worker queue's backlog
// (store.Lister).
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	if err := ctx.Err(); err != nil {
		return store.Stats{}, err
	}
	now := s.clock()
	st := store.Stats{Now: now, ByStatus: map[core.Status]int64{}}
	queues := [...]*store.QueueStats{&st.Sweep, &st.Reconcile}
	s.eachRecord(func(r *core.Record) {
		st.ByStatus[r.Status]++
		if r.Status == core.StatusUnknown && r.ReconcileAfter.IsZero() {
			st.Abandoned++
		}
	})
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for n := range uint32(len(sh.chunks) * slotsPerChunk) {
			c := &sh.slot(n).rec
			for k, q := range queues {
				if at, ok := c.dueAt(store.DueKind(k + 1)); ok && c.status != core.StatusAbsent && at <= now.UnixNano() {
					q.Due++
					if t := fromNanos(at); q.OldestDue.IsZero() || t.Before(q.OldestDue) {
						q.OldestDue = t
					}
				}
			}
		}
		sh.mu.Unlock()
	}
	return st, nil
}

// eachRecord calls f with every record, under its shard's lock.
func (s *Store) eachRecord(f func(*core.Record)) {
	var r core.Record
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for n := range uint32(len(sh.chunks) * slotsPerChunk) {
			if c := &sh.slot(n).rec; c.status != core.StatusAbsent {
				c.get(&r)
				f(&r)
			}
		}
		sh.mu.Unlock()
	}
}
