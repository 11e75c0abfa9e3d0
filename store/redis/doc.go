// Package redisstore is the Redis driver of idem (store/redis), over a
// github.com/redis/go-redis/v9 client: one server, Sentinel (the failover
// client) or Cluster, the caller's choice. It keeps no lifecycle logic: it
// loads, writes what core.Step decided under a (version, token)
// precondition, wakes waiters with sharded pub/sub and lists due records
// from per-bucket sorted sets. It needs Redis 7.0 or later.
//
// # Setting up
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}) // or NewFailoverClient, NewClusterClient
//	s, err := redisstore.New(ctx, rdb, redisstore.Options{Prefix: "payments"})
//	defer s.Close()
//	ex, err := idem.New(s)
//
// New refuses a server whose maxmemory-policy is not noeviction (CONFIG GET
// on every primary): an evicted record or token counter would decide an
// outcome, executing a key twice or handing a token out twice. Where CONFIG
// is disabled (managed services), set Options.SkipEvictionCheck and make
// sure of the policy by other means. The store sets no TTL on any key:
// Redis expiry never decides anything either; TTLs and tombstones follow
// the policy through the sweeper, as in the other stores.
//
// # Layout
//
// A scope belongs to one of 64 buckets (FNV-1a of the scope), and a bucket
// is one hash slot: its keys carry the bucket's hash tag, so that every
// script touches one slot, and the buckets spread evenly over the
// primaries of a cluster whose slots are split in equal ranges (at most 64
// primaries share the load). A bucket holds its records (one hash each,
// under Prefix), a token counter, a sorted set of due times per kind
// (sweep, reconcile), the claims of Due, the set of records someone waits
// on, and a change channel. The layout is part of the data: the buckets
// and their tags never change.
//
// # One script per decision
//
// Every call is one Lua script (loaded at New, run by EVALSHA, loaded again
// after NOSCRIPT): it reads the record and the server's clock (TIME) and,
// when needed, takes a fresh token, then writes under the precondition. A
// reserve of a new key is one call; so is a replay, a key in flight or a
// mismatch (a read: nothing is written, not even the counter); so is the
// executor's completion, failure or mark unknown of the attempt it holds
// (store.HeldApplier). The script computes what only the server knows at
// that instant from a template that core.Step made (see apply.go); the
// driver then steps the core again at the script's time and token and
// compares what the script wrote with it, field by field: any difference is
// a driver bug, reported as an error wrapping core.ErrInvalidRecord. Other
// events read, step and write: two calls. A failed precondition returns
// the record it found, which the event is stepped over again.
//
// go-redis would send a command again after a dropped connection or a
// timeout, and a script that had run once would then find its own write
// and report a failed precondition: the driver's commands are marked not to
// be retried, and it classifies every failure itself (Errors).
//
// # Tokens
//
// A fencing token is a bucket's counter in the high bits and the bucket in
// the low 8 bits, so tokens never repeat across buckets, and no counter is
// hot (each takes 1/64 of the load). The counter is never deleted (a
// delete or a prune does not touch it), so a scope's tokens grow across
// deletes and reuses of its key, and it never falls below the server's
// clock in microseconds: max(counter+1, TIME). A counter lost with a
// failover's last writes (or an operator's FLUSHALL) thus starts again
// above the tokens handed out before, unless the bucket handed out more
// than one token per microsecond on average or the new primary's clock is
// behind the old one's. Counters stay exact in Lua's numbers until 2255.
//
// # Due, claims and pruning
//
// Due asks every primary at once, with one script over all the buckets it
// serves, and merges the lists, most overdue first (to the microsecond in
// each bucket's set, then to the nanosecond). With Options.DueClaim several
// instances' sweepers and reconcilers work on disjoint records: the script
// skips what another instance claimed and, on one server, claims what it
// lists; on a cluster a second script per primary claims what the merged
// list kept. The sweeper expires records past their TTL and prunes
// tombstones past their retention by the core's decision, one fenced
// write each (there is no batched prune as in the PostgreSQL store).
//
// # Wait
//
// Wait subscribes to its bucket's channel (SSUBSCRIBE: on a cluster, on the
// primary that serves the bucket), then marks the record as waited on: the
// next write of a marked record publishes; a write of an unmarked one
// publishes nothing. A message lost to a reconnect or a failover only
// delays a waiter until its next poll (Options.PollInterval). A Store holds
// one subscribed connection to a server, one per bucket it has waited in
// on a cluster.
//
// # Time
//
// Every lifecycle time is the clock of the primary that serves the scope's
// bucket (TIME), never the host's, kept to the nanosecond. The primaries
// of a cluster, and a replica promoted by a failover, have clocks of their
// own: keep them synchronised (NTP). A failover steps a bucket's clock by
// the skew between the two servers, which the core takes as any clock
// step: a lease or a TTL ends a little sooner or later, and nothing
// executes twice for it.
//
// # Durability: what is and is not guaranteed
//
// Redis replicates asynchronously: a write the primary acknowledged is lost
// if the primary fails before a replica has it and that replica is
// promoted. A lost completion leaves the record in flight (its lease runs
// out, it becomes unknown, the reconciler settles it). A lost reserve
// leaves the key absent, and a retry executes it again: the one way a
// failover breaks at most once. A lost token counter is covered by the
// clock (see Tokens).
//
// make chaos-redis measures it (BENCHMARKS.md, "store/redis: chaos"): a
// cluster of three primaries with a replica each on loopback, a primary
// killed (SIGKILL, nothing on disk) every three seconds or so and failed
// over, then restarted to rejoin as a replica, while 24 clients retry
// payments through the executor. Without Options.ReplicasWait (the
// default), four runs of 30 s (37 failovers) lost 0, 0, 46 and 108
// acknowledged writes, and executed 0, 0, 13 and 40 keys twice; no key
// was left in progress or unknown. The losses come from a second failure
// while a shard recovers: a replica that has just synced (link up, sync
// done) is sent its primary's stream only after its first
// acknowledgement, up to a second later, and a primary that fails within
// that second takes every write since the sync with it. When each failure
// waited until the shard before had recovered (two runs, 14 failovers),
// nothing was lost: a primary then loses only what it had not yet handed
// to its replica's connection (microseconds on loopback; a slow or
// congested link to the replica, or a network partition, widens it).
//
// Options.ReplicasWait makes every call wait until that many replicas have
// it (WAIT), and reports one not acknowledged in time as ambiguous
// (ErrNotReplicated), never as done: an acknowledged write is then on
// ReplicasWait+1 servers. With ReplicasWait 1, the same commands (four
// runs, 35 failovers; two runs with each failure waiting for the shard
// before, 17) lost no acknowledged write, executed no key twice and left
// none open. The
// price is availability: while a primary has fewer replicas that follow
// its stream than ReplicasWait (one just promoted, until a replica has
// synced and acknowledged, up to a second after its sync), every call it
// serves is ambiguous: the store fails closed. What ReplicasWait does not
// cover:
//   - A read waits for no replica: a replay or an answer in flight may
//     show a write whose WAIT has not returned yet (its writer is then told
//     the outcome is unknown), which a failover can lose; the reader acted
//     on a state the key no longer has (the reconciler then settles the
//     key by its check). The harness counts these states: none in its
//     runs.
//   - With more than one replica a primary, Sentinel and Cluster prefer
//     the replica with the most recent data but do not guarantee to
//     promote one that has a given write (the best one may be unreachable
//     at that moment).
//   - WAIT makes nothing durable on disk: a write is gone if every server
//     that holds it loses its memory at once (unless the servers run AOF
//     with appendfsync always).
//
// TestFailover kills a primary under ReplicasWait 1 and finds every outcome
// completed before replayed by the promoted replica, and every fresh token
// above those handed out before. Where at most once must survive the
// failure of a primary, use ReplicasWait 1 (with one replica a primary, or
// mind the promotion above); where it must survive any failure, every
// server's memory lost at once included, use the PostgreSQL store.
//
// # Errors
//
// A failed precondition is store.ErrConflict. A definite refusal by the
// server (a script error, WRONGTYPE on a key, NOSCRIPT after a reload,
// NOPERM) is store.ErrRejected: the scripts read every key before they
// write any, so nothing was written. OOM (maxmemory under noeviction) is
// store.ErrStoreFull: reads, replays and deletes still work, only writes
// that grow the data fail. A failure before the script ran (no connection,
// READONLY, LOADING, CLUSTERDOWN, TRYAGAIN, MASTERDOWN, BUSY) wraps
// ErrNotApplied; a dropped connection or a timeout after the script was
// sent wraps ErrAmbiguous (never ErrConflict, never success); the caller's
// cancelled context is its context error. Each names the driver and the
// call once: "redisstore: update: outcome unknown: <cause>".
//
// # Values
//
// Every value the core accepts is stored byte for byte: Redis strings are
// bytes, and the response (status, schema version, headers, body) is one
// length-prefixed field. The conformance suite stores every byte of each
// alphabet through every write path.
package redisstore
