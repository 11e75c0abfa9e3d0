package idemhttp

import (
	"context"
	"errors"
	"testing"
	"time"
)

type valueKey struct{}

// waitDone reports whether ctx is done within a second: a cancellation
// arrives from context.AfterFunc's goroutine.
func waitDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	case <-time.After(time.Second):
		return false
	}
}

// TestDoContext: Do's context has the client's values; until start, it is
// cancelled with the client (armed or not, a child context included) and
// its Err and Cause agree; after start, the client's going away changes
// nothing, and a child is cancelled only by its own cancel.
func TestDoContext(t *testing.T) {
	errGone := errors.New("client gone (test)")
	newClient := func() (context.Context, context.CancelCauseFunc) {
		return context.WithCancelCause(context.WithValue(context.Background(), valueKey{}, "v"))
	}

	t.Run("gone before armed", func(t *testing.T) {
		client, cancel := newClient()
		var c doContext
		c.init(client)
		if c.Err() != nil || c.Value(valueKey{}) != "v" {
			t.Fatalf("fresh: Err %v, Value %v", c.Err(), c.Value(valueKey{}))
		}
		cancel(errGone)
		if !errors.Is(c.Err(), context.Canceled) || !waitDone(&c) || !errors.Is(context.Cause(&c), errGone) || c.start() {
			t.Fatalf("after the client went: Err %v, Cause %v, started %v", c.Err(), context.Cause(&c), c.state.Load() == watchRunning)
		}
		c.end()
	})
	t.Run("gone while armed", func(t *testing.T) {
		client, cancel := newClient()
		var c doContext
		c.init(client)
		child, cancelChild := context.WithCancel(&c) // arms it, as the executor's context does
		defer cancelChild()
		cancel(errGone)
		if !waitDone(child) || !errors.Is(context.Cause(child), errGone) || !errors.Is(context.Cause(&c), errGone) || c.Err() == nil {
			t.Fatalf("child %v (cause %v), Do's %v (cause %v)", child.Err(), context.Cause(child), c.Err(), context.Cause(&c))
		}
		c.end()
		if !c.fired {
			t.Fatal("the watch's callback ran, yet the attempt may be pooled")
		}
	})
	t.Run("gone after start", func(t *testing.T) {
		client, cancel := newClient()
		var c doContext
		c.init(client)
		child, cancelChild := context.WithCancelCause(&c)
		if !c.start() {
			t.Fatal("start refused with the client there")
		}
		cancel(errGone)
		<-client.Done()
		// start stopped the watch: nothing can arrive later, so no wait.
		if child.Err() != nil || c.Err() != nil || context.Cause(&c) != nil || child.Value(valueKey{}) != "v" {
			t.Fatalf("the client's going cancelled Do's context after start: %v, %v", child.Err(), c.Err())
		}
		cancelChild(errors.New("lease lost (test)")) // the executor's own cancellation still works
		if !waitDone(child) || context.Cause(child).Error() != "lease lost (test)" {
			t.Fatalf("child cause %v", context.Cause(child))
		}
		c.end()
		if c.fired {
			t.Fatal("fired after start")
		}
	})
}

// TestAnArmedAttemptIsNotPooled: a context made from Do's (the in-flight
// wait's timer) may call its parent's Done while it is cancelled, after Do
// returned; an attempt whose Do context was waited on is therefore left to
// the collector, not reset and pooled under that call (a nil parent, then
// a panic, under -race once in three runs of the end-to-end tests).
func TestAnArmedAttemptIsNotPooled(t *testing.T) {
	for _, armed := range []bool{false, true} {
		a := attemptPool.Get().(*attempt)
		a.doCtx.init(context.WithValue(context.Background(), valueKey{}, "v"))
		if armed {
			_, cancel := context.WithTimeout(&a.doCtx, time.Hour) // as Executor.wait does
			cancel()
		}
		a.done()
		if kept := a.doCtx.values != nil; kept != armed {
			t.Fatalf("armed %v: the attempt was kept %v, want %v", armed, kept, armed)
		}
	}
}
