package idem

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// outcomeCtx is what an attempt's outcome is written on: the caller's values
// without its cancellation (a client that disconnects must not turn a charge
// into an unknown), bounded by the outcome timeout. It is context.WithTimeout
// over context.WithoutCancel, except that the channel and the timer behind
// Done are made only if a store asks for Done: the memory store never does,
// so that most outcomes are written without either.
type outcomeCtx struct {
	parent   context.Context
	deadline time.Time

	once  sync.Once
	done  chan struct{}
	timer *time.Timer
	// released is set before release closes done, so that Err is never nil
	// once Done is closed: context.AfterFunc (pgx watches every query's
	// context with it) panics on a closed Done with a nil Err.
	released atomic.Bool
}

func (c *outcomeCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *outcomeCtx) Done() <-chan struct{} {
	c.once.Do(c.arm)
	return c.done
}

func (c *outcomeCtx) arm() {
	c.done = make(chan struct{})
	d := time.Until(c.deadline)
	if d <= 0 {
		close(c.done)
		return
	}
	c.timer = time.AfterFunc(d, func() { close(c.done) })
}

func (c *outcomeCtx) Err() error {
	if c.released.Load() {
		return context.Canceled
	}
	if time.Now().Before(c.deadline) {
		return nil
	}
	return context.DeadlineExceeded
}

func (c *outcomeCtx) Value(key any) any { return c.parent.Value(key) }

// release stops the timer, if Done made one: Do is over.
func (c *outcomeCtx) release() {
	c.once.Do(func() {}) // no Done after this: nothing to arm
	if c.timer != nil && c.timer.Stop() {
		c.released.Store(true)
		close(c.done)
	}
}
