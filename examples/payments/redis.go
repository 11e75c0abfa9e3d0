package main

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/store"
	redisstore "github.com/idemkit/idem/store/redis"
)

// openRedis opens the Redis store: one server, or a cluster when several
// nodes are named. New refuses a server that may evict keys.
func openRedis(ctx context.Context, addrs string) (store.Store, func(), error) {
	if addrs == "" {
		return nil, nil, errors.New("-store redis needs -redis")
	}
	// One address is a server, several a cluster's nodes (go-redis decides).
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(addrs, ",")})
	rs, err := redisstore.New(ctx, client, redisstore.Options{Prefix: "payments"})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return rs, func() { rs.Close(); client.Close() }, nil
}
