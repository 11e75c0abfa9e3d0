package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/store"
)

// Options configure a Store. The zero value keeps records under the prefix
// "idem" and checks the servers' eviction policy.
type Options struct {
	// Prefix starts every key of the store ("idem" if empty): two stores
	// with different prefixes share nothing, not even their tokens. At most
	// PrefixBytesMax bytes, without braces (the store sets each key's hash
	// tag).
	Prefix string
	// PollInterval bounds how long Wait trusts pub/sub alone: it checks the
	// record again after a jittered interval of about this much (half to the
	// whole), so that a lost message (a reconnect, a failover) only delays
	// a waiter. 1 s if zero; a negative value turns pub/sub off and polls
	// only (at the interval's absolute value).
	PollInterval time.Duration
	// DueClaim, when positive, makes Due claim what it lists for that long:
	// another Store's Due (another instance's sweeper or reconciler) skips
	// those records until then, so that N instances work on disjoint
	// records. A Store's own claims never hide a record from it (its Due
	// lists what it has not handled yet again, as without a claim). The
	// claim is a hint, never part of the record: a claimed record whose
	// worker died is listed again once the claim ends. Zero (the default)
	// lists without claiming: two instances may then step the same records,
	// which is correct (each write is fenced) but wasted work.
	DueClaim time.Duration
	// ReplicasWait, when positive, makes every Load, Insert, CompareAndSet,
	// Delete, Apply and ApplyHeld wait (WAIT) until that many replicas of
	// its primary acknowledged it, at most ReplicasWaitTimeout (Due and
	// Wait, which are hints, do not wait). A write not acknowledged in time is ambiguous
	// (ErrNotReplicated, ErrAmbiguous), never a success; so is a load, whose
	// fresh token must survive a failover. While a primary has fewer
	// replicas (one just promoted by a failover), every call it serves is
	// ambiguous. It narrows, but does not close, the window in which a
	// failover loses acknowledged writes (see the package documentation).
	// The client's ReadTimeout must exceed ReplicasWaitTimeout.
	ReplicasWait int
	// ReplicasWaitTimeout bounds each WAIT: 1 s if zero.
	ReplicasWaitTimeout time.Duration
	// SkipEvictionCheck skips New's check that every primary's
	// maxmemory-policy is noeviction, for servers where CONFIG is disabled
	// or renamed (managed services). The deployment must then guarantee
	// noeviction itself: a server that evicts can drop a record or a token
	// counter, and with it the guarantees of the store.
	SkipEvictionCheck bool
}

// Store is the Redis driver: a store.Store over a go-redis UniversalClient
// (one server, Sentinel, or Cluster). It is also a store.Applier and a
// store.HeldApplier. Create it with New; Close stops its subscriptions (the
// client is the caller's).
type Store struct {
	client  redis.UniversalClient
	cluster *redis.ClusterClient // set for a cluster
	single  *redis.Client        // set for one server (standalone or Sentinel)
	l       *layout
	opt     Options
	scripts scripts
	// instance tells this Store's Due claims from other instances': random,
	// so that two processes never share one.
	instance string
	subs     *subscribers
	closed   sync.Once
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Applier     = (*Store)(nil)
	_ store.HeldApplier = (*Store)(nil)
)

// New returns a Store over client. It refuses a Ring (its shards are
// independent servers), a server older than Redis 7.0, and, unless
// Options.SkipEvictionCheck, any primary whose maxmemory-policy is not
// noeviction; then it loads the scripts on every primary.
func New(ctx context.Context, client redis.UniversalClient, o Options) (*Store, error) {
	s := &Store{client: client, opt: o}
	switch c := client.(type) {
	case *redis.Client:
		if c == nil {
			return nil, errors.New("redisstore: New: nil client")
		}
		s.single = c
	case *redis.ClusterClient:
		if c == nil {
			return nil, errors.New("redisstore: New: nil client")
		}
		s.cluster = c
	case nil:
		return nil, errors.New("redisstore: New: nil client")
	default:
		return nil, fmt.Errorf("redisstore: New: a %T is not supported: pass a *redis.Client (one server, or Sentinel's failover client) or a *redis.ClusterClient", client)
	}
	if err := s.setOptions(); err != nil {
		return nil, err
	}
	if err := s.eachPrimary(ctx, s.checkServer); err != nil {
		return nil, err
	}
	s.subs = newSubscribers(s)
	return s, nil
}

func (s *Store) setOptions() error {
	o := &s.opt
	if o.Prefix == "" {
		o.Prefix = "idem"
	}
	if o.PollInterval == 0 {
		o.PollInterval = time.Second
	}
	if o.ReplicasWait < 0 || o.ReplicasWaitTimeout < 0 || o.DueClaim < 0 {
		return fmt.Errorf("redisstore: New: ReplicasWait %d, ReplicasWaitTimeout %v and DueClaim %v must not be negative", o.ReplicasWait, o.ReplicasWaitTimeout, o.DueClaim)
	}
	if o.ReplicasWaitTimeout == 0 {
		o.ReplicasWaitTimeout = time.Second
	}
	l, err := newLayout(o.Prefix)
	if err != nil {
		return err
	}
	s.l = l
	s.scripts = newScripts()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("redisstore: New: %w", err)
	}
	s.instance = hex.EncodeToString(b[:])
	return nil
}

// Close stops the store's subscriptions. It does not close the client,
// which is the caller's.
func (s *Store) Close() {
	s.closed.Do(func() { s.subs.close() })
}

// eachPrimary calls fn on every primary: the one server, or each primary
// of the cluster (concurrently).
func (s *Store) eachPrimary(ctx context.Context, fn func(context.Context, *redis.Client) error) error {
	if s.single != nil {
		return fn(ctx, s.single)
	}
	return s.cluster.ForEachMaster(ctx, fn)
}
