package redisstore

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/write.lua
	writeSource string
	//go:embed scripts/due.lua
	dueSource string
	//go:embed scripts/watch.lua
	watchSource string
)

// script is a Lua script and its SHA-1, by which EVALSHA names it.
type script struct {
	name, src, sha string
}

func newScript(name, src string) *script {
	h := sha1.Sum([]byte(src))
	return &script{name: name, src: src, sha: hex.EncodeToString(h[:])}
}

type scripts struct {
	write, due, claim, watch *script
}

func newScripts() scripts {
	return scripts{
		write: newScript("write", writeSource),
		due:   newScript("due", dueSource),
		claim: newScript("claim", claimSource),
		watch: newScript("watch", watchSource),
	}
}

// load loads every script on node, once at New: later calls send only the
// SHA.
func (sc scripts) load(ctx context.Context, node *redis.Client) error {
	for _, s := range []*script{sc.write, sc.due, sc.claim, sc.watch} {
		sha, err := node.ScriptLoad(ctx, s.src).Result()
		if err != nil {
			return fmt.Errorf("redisstore: New: SCRIPT LOAD %s on %s: %w", s.name, node.Options().Addr, err)
		}
		if sha != s.sha {
			return fmt.Errorf("redisstore: New: %s on %s loaded the %s script as %s, want %s", s.name, node.Options().Addr, s.name, sha, s.sha)
		}
	}
	return nil
}

// noRetryCmd is a command go-redis must not send twice: a script that may
// have run once (its connection dropped after the send) would run again,
// and a write that applied would then report its own result as a failed
// precondition. The driver classifies each failure itself (classify).
type noRetryCmd struct{ *redis.Cmd }

func (noRetryCmd) NoRetry() bool { return true }

// target is where a script runs: the client (which routes by the first
// key), or one node's client.
type target interface {
	Process(ctx context.Context, cmd redis.Cmder) error
	ScriptLoad(ctx context.Context, script string) *redis.StringCmd
}

// eval runs the command a (evalArgs) of sc on the primary of its first
// key and returns its reply; what names the call in errors. With
// Options.ReplicasWait, the script is followed by a WAIT on the same
// connection.
func (s *Store) eval(ctx context.Context, what string, sc *script, a []any) (any, error) {
	if s.opt.ReplicasWait > 0 && sc == s.scripts.write {
		return s.evalWaited(ctx, what, sc, a)
	}
	return s.evalOn(ctx, s.client, what, sc, a)
}

// evalOn runs the command a of sc on t (evalRaw) and classifies its error.
func (s *Store) evalOn(ctx context.Context, t target, what string, sc *script, a []any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redisstore: %s: %w (nothing was sent)", what, err)
	}
	v, err := evalRaw(ctx, t, sc, a)
	return v, s.failed(ctx, classify(ctx, what, err))
}

// failed returns err, after asking a cluster client to read the cluster's
// map again when err is an outage: a primary that stopped answering may
// have been replaced, and the driver's commands, which go-redis never
// sends twice, would otherwise not make it look.
func (s *Store) failed(ctx context.Context, err error) error {
	if s.cluster != nil && (errors.Is(err, ErrNotApplied) || errors.Is(err, ErrAmbiguous)) {
		s.cluster.ReloadState(ctx)
	}
	return err
}

// evalRaw runs the command a of sc (EVALSHA) on t, and once more after
// loading sc when the server did not know it (a restart, SCRIPT FLUSH, a
// replica promoted since New): NOSCRIPT means nothing ran. NOSCRIPT again
// is a refusal.
func evalRaw(ctx context.Context, t target, sc *script, a []any) (any, error) {
	cmd := evalCmd(ctx, a)
	err := t.Process(ctx, cmd)
	if isNoScript(err) {
		if err = t.ScriptLoad(ctx, sc.src).Err(); err == nil {
			cmd = evalCmd(ctx, a)
			err = t.Process(ctx, cmd)
		}
	}
	return cmd.Val(), err
}

// evalArgs is the command EVALSHA sc over keys with args, with room for
// that many more arguments, which the caller appends: the command is
// built once, in one slice, and sent as it is (again after a NOSCRIPT).
func evalArgs(sc *script, keys []string, room int, args ...any) []any {
	a := make([]any, 0, evalKeysAt+len(keys)+len(args)+room)
	a = append(a, "evalsha", sc.sha, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return append(a, args...)
}

// evalKeysAt is where an EVALSHA command's keys start.
const evalKeysAt = 3

// evalCmd is the command a, with its first key's position set as
// go-redis's own EvalSha sets it (a cluster client then routes it without
// looking for the key).
func evalCmd(ctx context.Context, a []any) noRetryCmd {
	cmd := redis.NewCmd(ctx, a...)
	if n, _ := a[evalKeysAt-1].(int); n > 0 {
		cmd.SetFirstKeyPos(evalKeysAt)
	}
	return noRetryCmd{cmd}
}

// evalWaited runs the command a of sc and then WAIT on one connection to
// the primary of its first key, so that WAIT counts the replicas that have
// the script's effect.
func (s *Store) evalWaited(ctx context.Context, what string, sc *script, a []any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redisstore: %s: %w (nothing was sent)", what, err)
	}
	node, err := s.primaryOf(ctx, a[evalKeysAt].(string))
	if err != nil {
		return nil, s.failed(ctx, classify(ctx, what, err))
	}
	for attempt := 0; ; attempt++ {
		cmd := evalCmd(ctx, a)
		wait := noRetryCmd{redis.NewCmd(ctx, "wait", s.opt.ReplicasWait, s.opt.ReplicasWaitTimeout.Milliseconds())}
		pipe := node.Pipeline()
		_ = pipe.Process(ctx, cmd)
		_ = pipe.Process(ctx, wait)
		_, _ = pipe.Exec(ctx)
		err := cmd.Err()
		switch {
		case isNoScript(err) && attempt == 0:
			if err := node.ScriptLoad(ctx, sc.src).Err(); err != nil {
				return nil, classify(ctx, what+": loading the script again", err)
			}
			continue
		case err != nil:
			if isRedirect(err) && s.cluster != nil {
				s.cluster.ReloadState(ctx)
			}
			return nil, s.failed(ctx, classify(ctx, what, err))
		}
		n, werr := wait.Int64()
		if werr != nil || n < int64(s.opt.ReplicasWait) {
			return nil, classify(ctx, what, fmt.Errorf("%w: %d of %d replicas of %s within %v (%v)", ErrNotReplicated, n, s.opt.ReplicasWait, node.Options().Addr, s.opt.ReplicasWaitTimeout, werr))
		}
		return cmd.Val(), nil
	}
}

// primaryOf is the client of the primary that serves key.
func (s *Store) primaryOf(ctx context.Context, key string) (*redis.Client, error) {
	if s.single != nil {
		return s.single, nil
	}
	return s.cluster.MasterForKey(ctx, key)
}
