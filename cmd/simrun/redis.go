package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/sim"
	redisstore "github.com/idemkit/idem/store/redis"
)

// openRedis returns the live runs' store opener over the Redis server at
// addrs (one address, or a cluster's nodes comma-separated): each seed
// gets a store under a prefix of its own, which nothing else uses, and
// its keys are removed when the seed ends. The client is closed by the
// function returned second.
func openRedis(addrs string) (sim.OpenLiveStore, func(), error) {
	if addrs == "" {
		return nil, nil, errors.New("-store redis needs -redis")
	}
	// One address is a server, several a cluster's nodes (go-redis decides).
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(addrs, ",")})
	run := fmt.Sprintf("simrun-%d-%d", os.Getpid(), time.Now().UnixNano())
	open := func(seed uint64) (sim.LiveStore, func(), error) {
		prefix := fmt.Sprintf("%s-%d", run, seed)
		s, err := redisstore.New(context.Background(), client, redisstore.Options{Prefix: prefix, PollInterval: 100 * time.Millisecond})
		if err != nil {
			return nil, nil, err
		}
		return s, func() { s.Close(); removePrefix(client, prefix) }, nil
	}
	return open, func() { client.Close() }, nil
}

// removePrefix unlinks every key under prefix (its own: a run's prefix is
// unique), on every primary of a cluster. A failure leaves keys behind,
// which nothing reads again: it is not worth failing the run for.
func removePrefix(client redis.UniversalClient, prefix string) {
	ctx := context.Background()
	remove := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+":*", 512).Iterator()
		for iter.Next(ctx) {
			c.Unlink(ctx, iter.Val())
		}
		return iter.Err()
	}
	var err error
	switch c := client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, remove)
	case *redis.Client:
		err = remove(ctx, c)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "simrun: removing the keys of %s: %v\n", prefix, err)
	}
}
