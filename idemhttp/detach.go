package idemhttp

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// A client's disconnect does not decide a protected request's outcome (see
// the package documentation): it cancels the request until the handler
// starts, and nothing after.

// ExecutionTimeoutDefault bounds a handler's run on a route that sets no
// Route.ExecutionTimeout: long enough for a slow downstream call, short
// enough that a handler whose client left does not hold its goroutine and
// its lease for long.
const ExecutionTimeoutDefault = time.Minute

// ErrExecutionTimeout is the cause (context.Cause) of a handler's context
// that reached the route's ExecutionTimeout.
var ErrExecutionTimeout = errors.New("idemhttp: the route's execution timeout passed")

// errClientGone is why a handler did not start: its client went away once
// the key was reserved, before the handler ran. Nothing ran, so the
// attempt says NotExecuted and the key is free at once.
var errClientGone = errors.New("the client went away before the handler started")

// The states of a doContext's watch over the client.
const (
	watchWaiting int32 = iota // the handler has not started: a disconnect cancels Do
	watchRunning              // the handler started: a disconnect changes nothing
	watchGone                 // the client went away before the handler started
)

// doContext is the context Do runs on, part of the attempt: the client's
// values, cancelled when the client goes away until the handler starts;
// once it has started, the executor's own cancellation (a lost lease,
// idem.ErrLeaseLost) is the only one the handler's context gets.
//
// It costs nothing until something waits on it: the context that carries
// the cancellation (inner, a context.WithCancelCause) and the watch over the
// client (context.AfterFunc) are made by the first Done, which a replay
// from the memory store never calls. Once armed, Value answers from inner,
// so that the context package sees inner as this context's cancellation:
// a child context (the executor's, the handler's) or a driver's
// context.AfterFunc (pgx) then hangs on it directly, without a goroutine.
type doContext struct {
	values context.Context // the client's, without its cancellation
	client context.Context
	state  atomic.Int32
	armed  atomic.Bool // inner is set

	mu     sync.Mutex
	inner  context.Context // set once, before armed
	cancel context.CancelCauseFunc
	stop   func() bool // the watch over the client, if armed while waiting
	// fired is set when the watch's callback started: it may still be
	// running, so the attempt is not pooled (see attempt.done).
	fired bool
}

func (c *doContext) init(client context.Context) {
	c.values, c.client = context.WithoutCancel(client), client
}

func (c *doContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *doContext) Done() <-chan struct{}       { return c.arm().Done() }

func (c *doContext) Value(key any) any {
	if c.armed.Load() {
		return c.inner.Value(key) // inner's own cancellation key included
	}
	return c.values.Value(key)
}

func (c *doContext) Err() error {
	if c.armed.Load() {
		return c.inner.Err()
	}
	if c.gone() {
		return c.client.Err()
	}
	return nil
}

// gone reports whether the client went away before the handler started.
func (c *doContext) gone() bool {
	switch c.state.Load() {
	case watchGone:
		return true
	case watchWaiting:
		return c.client.Err() != nil && (c.state.CompareAndSwap(watchWaiting, watchGone) || c.state.Load() == watchGone)
	}
	return false
}

// arm makes the inner context, cancelled at once if the client has gone,
// else watched for as long as the handler has not started.
func (c *doContext) arm() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.armed.Load() {
		c.inner, c.cancel = context.WithCancelCause(c.values)
		c.armed.Store(true)
		switch {
		case c.gone():
			c.cancel(context.Cause(c.client))
		case c.state.Load() == watchWaiting:
			c.stop = context.AfterFunc(c.client, c.clientGone)
		}
	}
	return c.inner
}

// clientGone cancels the inner context if the handler has not started.
func (c *doContext) clientGone() {
	if c.state.CompareAndSwap(watchWaiting, watchGone) {
		c.mu.Lock()
		cancel := c.cancel
		c.mu.Unlock()
		cancel(context.Cause(c.client))
	}
}

// start ends the client's hold as the handler starts, and the watch with
// it, and reports false if the client has gone already: then nothing has
// run.
func (c *doContext) start() bool {
	if c.client.Err() != nil || !c.state.CompareAndSwap(watchWaiting, watchRunning) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		c.fired = !c.stop()
		c.stop = nil
	}
	return true
}

// end stops the watch: Do has returned (or panicked with the handler's
// panic).
func (c *doContext) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		c.fired = c.fired || !c.stop()
	}
	if c.cancel != nil {
		c.cancel(nil)
	}
}

// handlerContext is the handler's context: the action's (which only a lost
// lease cancels once the handler has started), bounded by the route's
// execution timeout.
func (a *attempt) handlerContext(action context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(action, a.executionTimeout, ErrExecutionTimeout)
}
