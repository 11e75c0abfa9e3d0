package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// checkServer is New's check of one primary: Redis 7.0 or later (sharded
// pub/sub, script flags), the noeviction policy unless skipped, and the
// scripts loaded.
func (s *Store) checkServer(ctx context.Context, node *redis.Client) error {
	addr := node.Options().Addr
	info, err := node.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("redisstore: New: INFO server on %s: %w", addr, err)
	}
	if v := infoField(info, "redis_version"); !atLeast7(v) {
		return fmt.Errorf("redisstore: New: %s runs Redis %q; the store needs 7.0 or later (sharded pub/sub, script flags)", addr, v)
	}
	if !s.opt.SkipEvictionCheck {
		if err := checkNoEviction(ctx, node); err != nil {
			return err
		}
	}
	return s.scripts.load(ctx, node)
}

// checkNoEviction refuses a server that may evict keys: an evicted record
// or token counter would silently decide an outcome (a key executed twice,
// a token handed out twice). Expiry never applies: the store sets no TTL.
func checkNoEviction(ctx context.Context, node *redis.Client) error {
	addr := node.Options().Addr
	m, err := node.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		return fmt.Errorf("redisstore: New: CONFIG GET maxmemory-policy on %s: %w (where CONFIG is disabled, make sure the policy is noeviction and set Options.SkipEvictionCheck)", addr, err)
	}
	if p := m["maxmemory-policy"]; p != "noeviction" {
		return fmt.Errorf("redisstore: New: %s has maxmemory-policy %q: the store needs noeviction (CONFIG SET maxmemory-policy noeviction), so that Redis never evicts a record or a token counter; at maxmemory, writes then fail with store.ErrStoreFull", addr, p)
	}
	return nil
}

// infoField is the value of name in an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

func atLeast7(version string) bool {
	major, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(major)
	return err == nil && n >= 7
}
