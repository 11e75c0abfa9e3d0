package idemhttp

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// A client's disconnect does not decide a protected request's outcome (see
// the package documentation): it cancels the request until the handler
// starts, and nothing after.

// DefaultExecutionTimeout bounds a handler's run on a route that sets no
// Route.ExecutionTimeout: long enough for a slow downstream call, short
// enough that a handler whose client left does not hold its goroutine and
// its lease for long.
const DefaultExecutionTimeout = time.Minute

// ErrExecutionTimeout is the cause (context.Cause) of a handler's context
// that reached the route's ExecutionTimeout.
var ErrExecutionTimeout = errors.New("idemhttp: the route's execution timeout passed")

// errClientGone is why a handler did not start: its client went away once
// the key was reserved, before the handler ran. Nothing ran, so the
// attempt says NotExecuted and the key is free at once.
var errClientGone = errors.New("the client went away before the handler started")

// The states of an attempt's watch over its client.
const (
	watchWaiting int32 = iota // the handler has not started: a disconnect cancels Do
	watchRunning              // the handler started: a disconnect changes nothing
	watchGone                 // the client went away before the handler started
)

// watch is an attempt's watch over its client's context.
type watch struct {
	state  atomic.Int32
	client context.Context
	cancel context.CancelCauseFunc // Do's context
	stop   func() bool             // the callback on the client
	// fired is set when the client went away while watched: its callback
	// may still be running, so the attempt is not pooled (see done).
	fired bool
}

// watchClient returns the context Do runs on: the client's values, and
// cancelled with the client's cause when the client goes away, until start.
// Once the handler has started, the executor's own cancellation (a lost
// lease, idem.ErrLeaseLost) is the only one the handler's context gets.
// The attempt's done ends the watch (endWatch).
func (a *attempt) watchClient(client context.Context) context.Context {
	w := &a.watch
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(client))
	w.client, w.cancel = client, cancel
	if client.Err() != nil { // gone already: Do must see it at once, not when the callback runs
		w.state.Store(watchGone)
		cancel(context.Cause(client))
		return ctx
	}
	w.stop = context.AfterFunc(client, a.clientGone)
	return ctx
}

// clientGone cancels Do's context if the handler has not started.
func (a *attempt) clientGone() {
	if w := &a.watch; w.state.CompareAndSwap(watchWaiting, watchGone) {
		w.cancel(context.Cause(w.client))
	}
}

// endWatch stops the watch, if one was started: Do has returned, or
// panicked with the handler's panic.
func (a *attempt) endWatch() {
	w := &a.watch
	if w.stop != nil {
		w.fired = !w.stop()
	}
	if w.cancel != nil {
		w.cancel(nil)
	}
}

// start ends the client's hold on the attempt as the handler starts, and
// reports false if the client has gone already: then nothing has run.
func (a *attempt) start() bool {
	return a.r.Context().Err() == nil && a.watch.state.CompareAndSwap(watchWaiting, watchRunning)
}

// handlerContext is the handler's context: the action's (which only a lost
// lease cancels once the handler has started), bounded by the route's
// execution timeout.
func (a *attempt) handlerContext(action context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(action, a.executionTimeout, ErrExecutionTimeout)
}
