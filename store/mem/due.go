package memstore

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

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
