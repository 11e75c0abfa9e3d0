package redisstore

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// ErrAmbiguous is wrapped by every failure after which a write may or may
// not have applied: the connection dropped or timed out after the script
// was sent, or a write was not acknowledged by Options.ReplicasWait
// replicas in time. It is never store.ErrConflict and never success:
// callers load again, and the executor fails closed.
var ErrAmbiguous = errors.New("redisstore: the outcome of the script is unknown")

// ErrNotApplied is wrapped by a failure after which the write certainly did
// not apply, though the store could not answer: no connection could be had
// (a refused dial, the pool's timeout, a closed client), or the server
// refused the script before running it for a passing reason (READONLY from
// a demoted primary, LOADING, CLUSTERDOWN, TRYAGAIN, MASTERDOWN, BUSY, a
// MOVED or ASK the client could not follow). An outage, not a refusal: the
// same call may succeed later.
var ErrNotApplied = errors.New("redisstore: the script did not run")

// ErrNotReplicated is wrapped (with ErrAmbiguous) by a write that the
// server applied but fewer than Options.ReplicasWait replicas acknowledged
// within Options.ReplicasWaitTimeout: it may be lost by a failover, so it
// is not reported as done.
var ErrNotReplicated = errors.New("redisstore: not acknowledged by enough replicas in time")

// notRunPrefixes are the first words of the server's errors that refuse a
// command before it runs, for a passing reason.
var notRunPrefixes = []string{"READONLY", "LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "BUSY", "MOVED", "ASK", "NOREPLICAS", "MISCONF"}

// scriptError is a failed script call, classified: it wraps its class's
// sentinel and the cause, and names the driver and the call once
// ("redisstore: update: outcome unknown: <cause>").
type scriptError struct {
	what  string
	class error // ErrAmbiguous, ErrNotApplied, store.ErrRejected or store.ErrStoreFull
	cause error
}

var classLabels = map[error]string{
	ErrAmbiguous:       "outcome unknown",
	ErrNotApplied:      "not applied",
	store.ErrRejected:  "rejected by the server (nothing was written)",
	store.ErrStoreFull: "the server is out of memory (nothing was written)",
}

func (e *scriptError) Error() string {
	return "redisstore: " + e.what + ": " + classLabels[e.class] + ": " + e.cause.Error()
}

func (e *scriptError) Unwrap() []error { return []error{e.class, e.cause} }

// contextError is a call cut short by its caller's context: the context's
// error, as is, so that a caller who went away is not counted as an outage.
type contextError struct {
	what   string
	ctxErr error
}

func (e *contextError) Error() string {
	return "redisstore: " + e.what + ": " + e.ctxErr.Error() + " (the script may have run)"
}

func (e *contextError) Unwrap() error { return e.ctxErr }

// classify maps a script call's error for the store's callers:
//   - a server error that refuses the command before it runs for a
//     passing reason (notRunPrefixes), or no connection at all, is
//     ErrNotApplied;
//   - OOM (maxmemory reached under noeviction) is store.ErrStoreFull: the
//     store rejects a write rather than evict a record;
//   - any other server error (a script error, WRONGTYPE, NOSCRIPT after a
//     reload, NOPERM) is store.ErrRejected: the scripts check every key
//     before they write any, so nothing was written, and the same call
//     would be rejected again;
//   - the caller's context ending is its context error;
//   - a write fewer replicas acknowledged than Options.ReplicasWait asks,
//     and anything else (a dropped connection, a timeout), is ErrAmbiguous.
//
// A reply the driver cannot read (core.ErrInvalidRecord) is a bug, not an
// outage: it is returned as it is.
func classify(ctx context.Context, what string, err error) error {
	if err == nil || errors.Is(err, core.ErrInvalidRecord) {
		return err
	}
	if errors.Is(err, ErrNotReplicated) {
		return &scriptError{what, ErrAmbiguous, err}
	}
	var re redis.Error
	if errors.As(err, &re) {
		word, _, _ := strings.Cut(re.Error(), " ")
		switch {
		case word == "OOM":
			return &scriptError{what, store.ErrStoreFull, err}
		case isNotRun(word) || strings.HasPrefix(re.Error(), "ERR max number of clients"):
			return &scriptError{what, ErrNotApplied, err}
		}
		return &scriptError{what, store.ErrRejected, err}
	}
	if ctx.Err() != nil {
		return &contextError{what, ctx.Err()}
	}
	if notSent(err) {
		return &scriptError{what, ErrNotApplied, err}
	}
	return &scriptError{what, ErrAmbiguous, err}
}

func isNotRun(word string) bool {
	for _, p := range notRunPrefixes {
		if word == p {
			return true
		}
	}
	return false
}

// notSent reports whether err came before anything was written to a
// connection: a failed dial, no connection from the pool, a closed client.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed)
}

// isNoScript reports whether the server did not know a script's SHA.
func isNoScript(err error) bool {
	if err == nil {
		return false // no allocation on every call's way (errors.As's target)
	}
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOSCRIPT")
}

// isRedirect reports whether a node refused a command for a slot it does
// not serve (the cluster's map changed): nothing ran.
func isRedirect(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	word, _, _ := strings.Cut(re.Error(), " ")
	return word == "MOVED" || word == "ASK" || word == "CROSSSLOT" || word == "TRYAGAIN" ||
		strings.Contains(re.Error(), "non local key")
}
