package redisstore

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

var _ store.Lister = (*Store)(nil)

// scanCount is the COUNT hint of the operator's scans, and the records
// read in one pipeline.
const scanCount = 512

// List returns the records q selects, oldest first (store.Lister). Redis
// has no index by creation time: it scans every record of the store (SCAN
// on every primary, the records read in pipelines), so a page costs the
// whole store's records. It is an operator's view, never on a request's
// path; on a store of millions, expect seconds.
func (s *Store) List(ctx context.Context, q store.ListQuery) ([]core.Record, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	var all []core.Record
	if err := s.eachRecord(ctx, func(r *core.Record) { all = append(all, *r) }); err != nil {
		return nil, err
	}
	return q.Page(all), nil
}

// Stats counts the records per status (a scan of every record, as List)
// and reads each worker queue's backlog from the due indexes, at the clock
// of the first primary (store.Lister).
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	st := store.Stats{ByStatus: map[core.Status]int64{}}
	err := s.eachRecord(ctx, func(r *core.Record) {
		st.ByStatus[r.Status]++
		if r.Status == core.StatusUnknown && r.ReconcileAfter.IsZero() {
			st.Abandoned++
		}
	})
	if err != nil {
		return store.Stats{}, err
	}
	groups, err := s.dueGroups(ctx)
	if err != nil {
		return store.Stats{}, classify(ctx, "stats", err)
	}
	first := groups[0].node.(redis.Cmdable) // a *redis.Client: the server, or a primary
	if st.Now, err = first.Time(ctx).Result(); err != nil {
		return store.Stats{}, classify(ctx, "stats", err)
	}
	nowMicros := strconv.FormatInt(st.Now.UnixMicro(), 10)
	for _, g := range groups {
		for _, b := range g.buckets {
			for _, q := range []struct {
				sweep bool
				stats *store.QueueStats
			}{{true, &st.Sweep}, {false, &st.Reconcile}} {
				if err := queueStats(ctx, g.node.(redis.Cmdable), s.l.index(b, q.sweep), nowMicros, q.stats); err != nil {
					return store.Stats{}, classify(ctx, "stats", err)
				}
			}
		}
	}
	return st, nil
}

// queueStats adds the records of one due index that are due by nowMicros
// to q, and its oldest due time.
func queueStats(ctx context.Context, c redis.Cmdable, index, nowMicros string, q *store.QueueStats) error {
	due, err := c.ZCount(ctx, index, "-inf", nowMicros).Result()
	if err != nil || due == 0 {
		return err
	}
	first, err := c.ZRangeWithScores(ctx, index, 0, 0).Result()
	if err != nil || len(first) == 0 {
		return err
	}
	q.Due += due
	if at := time.UnixMicro(int64(first[0].Score)).UTC(); q.OldestDue.IsZero() || at.Before(q.OldestDue) {
		q.OldestDue = at
	}
	return nil
}

// eachRecord calls fn with every record of the store, one at a time.
func (s *Store) eachRecord(ctx context.Context, fn func(*core.Record)) error {
	var mu sync.Mutex
	pattern := globEscape(s.l.prefix) + ":{*}:" + keyRecord + "*"
	err := s.eachPrimary(ctx, func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, pattern, scanCount).Iterator()
		var keys []string
		for iter.Next(ctx) {
			if keys = append(keys, iter.Val()); len(keys) == scanCount {
				if err := s.readRecords(ctx, c, keys, &mu, fn); err != nil {
					return err
				}
				keys = keys[:0]
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		return s.readRecords(ctx, c, keys, &mu, fn)
	})
	return classify(ctx, "list", err)
}

// readRecords reads keys' records in one pipeline and calls fn with each,
// under mu (the primaries of a cluster are read at once). A key deleted
// since the scan is skipped; one that is not a record of this store is
// core.ErrInvalidRecord.
func (s *Store) readRecords(ctx context.Context, c *redis.Client, keys []string, mu *sync.Mutex, fn func(*core.Record)) error {
	if len(keys) == 0 {
		return nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(keys))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HGetAll(ctx, k)
		}
		return nil
	}); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	for i, k := range keys {
		fields := cmds[i].Val()
		if len(fields) == 0 {
			continue
		}
		rec, err := recordAt(k, fields)
		if err != nil {
			return err
		}
		fn(&rec)
	}
	return nil
}

// recordAt decodes the record stored at key ("prefix:{tag}:r:member").
func recordAt(key string, fields map[string]string) (core.Record, error) {
	_, m, ok := strings.Cut(key, "}:"+keyRecord)
	sc, err := scopeOf(m)
	if !ok || err != nil {
		return core.Record{}, invalid(core.Scope{}, "key "+strconv.Quote(key)+" is not a record's")
	}
	flat := make([]any, 0, 2*len(fields))
	for name, v := range fields {
		flat = append(flat, name, v)
	}
	return decodeRecord(sc, flat, true)
}

// globEscape quotes the characters SCAN's MATCH pattern treats specially,
// so that a prefix matches only itself.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
