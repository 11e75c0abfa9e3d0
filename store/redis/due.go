package redisstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Due implements store.Store. Each bucket indexes its records by the
// microsecond they fall due (a sorted set per kind, written by the same
// script as the record), so a batch costs about the batch. One script per
// primary lists the most overdue of all the buckets it serves (at most
// limit), the primaries are asked at once, and the lists are merged, most
// overdue first. With Options.DueClaim, what another instance claimed is
// skipped, and what is listed is claimed: by the same script on one
// server; on a cluster, by a second script per primary, for what the
// merged list kept.
func (s *Store) Due(ctx context.Context, kind store.DueKind, limit int) ([]core.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if kind != store.DueSweep && kind != store.DueReconcile {
		return nil, fmt.Errorf("redisstore: due: %v is not a kind of due record", kind)
	}
	if limit <= 0 {
		return nil, nil
	}
	groups, err := s.dueGroups(ctx)
	if err != nil {
		return nil, s.failed(ctx, classify(ctx, "due", err))
	}
	sweep := kind == store.DueSweep
	claimInList := s.opt.DueClaim > 0 && len(groups) == 1
	items, err := eachGroup(groups, func(g int) ([]dueItem, error) {
		return s.dueGroup(ctx, groups[g], g, sweep, limit, claimInList)
	})
	if err != nil {
		return nil, err
	}
	items = mergeDue(items, limit)
	if s.opt.DueClaim > 0 && !claimInList {
		if items, err = s.claim(ctx, groups, items, sweep); err != nil {
			return nil, err
		}
	}
	recs := make([]core.Record, len(items))
	for i := range items {
		recs[i] = items[i].rec
	}
	return recs, nil
}

// dueGroup is the buckets one primary serves, and its client.
type dueGroup struct {
	node    target
	buckets []int
}

// dueItem is a record Due listed: when it fell due, where it is.
type dueItem struct {
	at     time.Time
	member string
	rec    core.Record
	group  int // in dueGroups
	bucket int
}

// dueGroups groups the buckets by primary: one group on one server, one per
// primary of a cluster (as the client's map of the slots has it).
func (s *Store) dueGroups(ctx context.Context) ([]dueGroup, error) {
	all := make([]int, bucketCount)
	for b := range all {
		all[b] = b
	}
	if s.single != nil {
		return []dueGroup{{s.single, all}}, nil
	}
	byNode := map[*redis.Client]int{}
	var groups []dueGroup
	for _, b := range all {
		node, err := s.cluster.MasterForKey(ctx, s.l.index(b, true))
		if err != nil {
			return nil, err
		}
		i, ok := byNode[node]
		if !ok {
			i = len(groups)
			byNode[node] = i
			groups = append(groups, dueGroup{node: node})
		}
		groups[i].buckets = append(groups[i].buckets, b)
	}
	return groups, nil
}

// eachGroup calls list for every group at once and returns what they
// listed, or the first error.
func eachGroup(groups []dueGroup, list func(g int) ([]dueItem, error)) ([]dueItem, error) {
	lists := make([][]dueItem, len(groups))
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for g := range groups {
		wg.Go(func() { lists[g], errs[g] = list(g) })
	}
	wg.Wait()
	var all []dueItem
	for g := range groups {
		if errs[g] != nil {
			return nil, errs[g]
		}
		all = append(all, lists[g]...)
	}
	return all, nil
}

// mergeDue sorts items most overdue first and keeps at most limit.
func mergeDue(items []dueItem, limit int) []dueItem {
	slices.SortFunc(items, func(a, b dueItem) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.member, b.member)
	})
	return items[:min(limit, len(items))]
}

// dueGroup lists group g's due records (claiming them if claim). When its
// primary no longer serves one of the buckets (the cluster's map changed),
// each bucket is asked through the cluster client, which follows the
// redirection.
func (s *Store) dueGroup(ctx context.Context, grp dueGroup, g int, sweep bool, limit int, claim bool) ([]dueItem, error) {
	items, err := s.dueOn(ctx, grp.node, grp.buckets, g, sweep, limit, claim)
	if err == nil || s.cluster == nil || !isRedirect(err) {
		return items, err
	}
	s.cluster.ReloadState(ctx)
	items = items[:0]
	for _, b := range grp.buckets {
		more, err := s.dueOn(ctx, s.client, []int{b}, g, sweep, limit, claim)
		if err != nil {
			return nil, err
		}
		items = append(items, more...)
	}
	return items, nil
}

// dueOn runs the due script over buckets on t. A redirection is returned
// as it is (dueGroup's fallback), any other error classified.
func (s *Store) dueOn(ctx context.Context, t target, buckets []int, g int, sweep bool, limit int, claim bool) ([]dueItem, error) {
	keys := make([]string, 0, 2*len(buckets))
	args := make([]any, 0, 3+len(buckets))
	instance, claimFor := "", int64(0)
	if s.opt.DueClaim > 0 {
		instance = s.instance
	}
	if claim {
		claimFor = s.opt.DueClaim.Microseconds()
	}
	args = append(args, limit, instance, claimFor)
	for _, b := range buckets {
		keys = append(keys, s.l.index(b, sweep), s.l.claims(b))
		args = append(args, s.l.recordPrefix(b))
	}
	v, err := s.evalDue(ctx, t, "due", s.scripts.due, keys, args)
	if err != nil {
		return nil, err
	}
	return dueItems(v, sweep, within(len(buckets), func(i int) (int, int) { return g, buckets[i] }))
}

// within is the where of dueItems for n entries: at(i) for 0 <= i < n.
func within(n int, at func(i int) (g, b int)) func(int) (int, int, bool) {
	return func(i int) (int, int, bool) {
		if i < 0 || i >= n {
			return 0, 0, false
		}
		g, b := at(i)
		return g, b, true
	}
}

// evalDue runs a script of Due on t: a redirection is returned as it is,
// any other error classified.
func (s *Store) evalDue(ctx context.Context, t target, what string, sc *script, keys []string, args []any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := evalRaw(ctx, t, sc, evalArgs(sc, keys, 0, args...))
	if err != nil && !isRedirect(err) {
		err = s.failed(ctx, classify(ctx, what, err))
	}
	return v, err
}

// dueItems reads a Due script's reply: the server's time, then entries of
// an index (which where names as a group and a bucket), a member and the
// record's fields. A record that is no longer due (written since it was
// listed) is left out.
func dueItems(v any, sweep bool, where func(int) (g, b int, ok bool)) ([]dueItem, error) {
	a, ok := v.([]any)
	if !ok || len(a) < 2 {
		return nil, fmt.Errorf("redisstore: due: the script answered %v: %w", v, core.ErrInvalidRecord)
	}
	items := make([]dueItem, 0, len(a)-2)
	for _, x := range a[2:] {
		bad := func() error { return fmt.Errorf("redisstore: due: an entry %v: %w", x, core.ErrInvalidRecord) }
		e, ok := x.([]any)
		if !ok || len(e) != 3 {
			return nil, bad()
		}
		i, ok1 := e[0].(int64)
		m, ok2 := e[1].(string)
		fields, ok3 := e[2].([]any)
		g, b, ok4 := where(int(i))
		sc, err := scopeOf(m)
		if !ok1 || !ok2 || !ok3 || !ok4 || err != nil {
			return nil, bad()
		}
		rec, err := decodeRecord(sc, fields, true)
		if err != nil {
			return nil, err
		}
		if at, due := dueAt(&rec, sweep); due {
			items = append(items, dueItem{at: at, member: m, rec: rec, group: g, bucket: b})
		}
	}
	return items, nil
}
