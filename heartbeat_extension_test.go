package idem_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// TestHeartbeatKeepsItsExtension: a long action's heartbeats extend its
// lease, then the store fails every heartbeat past the reservation's first
// lease end. Those failures come before the extended lease ends, so the
// attempt still holds its key: the action must not be cancelled (mutant
// exec-beat-loses-extension, where Do's heartbeat forgets the extension
// and takes the first lease end for the last).
func TestHeartbeatKeepsItsExtension(t *testing.T) {
	// Real time: Do's heartbeat runs on the host's clock. The lease is long
	// enough that a busy machine's late timers do not reach the extended
	// lease end: beats at a third of it, the failing ones from its end on,
	// the extended lease ending two thirds of a lease later.
	const lease = 900 * time.Millisecond
	mem := memstore.New(memstore.Options{Clock: time.Now})
	fs := &beatFailer{}
	s := store.Wrap(store.Layer{Outer: mem, Inner: mem, Apply: fs.apply})
	p := idem.PolicyDefault()
	p.LeaseDuration = lease
	ex, err := idem.New(s, idem.WithPolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	var cause error
	res, err := ex.Do(context.Background(), request(key1, payload), func(ctx context.Context, at idem.Attempt) (idem.Response, error) {
		fs.arm(at.LockedUntil)
		// Run until two heartbeats failed past the first lease end (the
		// attempt's lease was extended beyond both), or until cancelled.
		select {
		case <-fs.failedTwice:
			return created, nil
		case <-ctx.Done():
			cause = context.Cause(ctx)
			return idem.Response{}, cause
		case <-time.After(10 * lease):
			t.Error("the heartbeats never failed: the test's store did not do its part")
			return created, nil
		}
	})
	if cause != nil {
		t.Fatalf("the action was cancelled (%v) although its lease had been extended past the failed heartbeats (%d extended first)", cause, fs.extended())
	}
	if err != nil || res.Kind != idem.ResultExecuted || !res.Recorded {
		t.Fatalf("Do: %+v, %v; want executed and recorded", res, err)
	}
	if fs.extended() == 0 {
		t.Fatal("no heartbeat extended the lease before the failures: the schedule did not happen")
	}
}

// beatFailer lets heartbeats through until the host's clock passes the
// reservation's first lease end, and fails every one after.
type beatFailer struct {
	mu          sync.Mutex
	firstEnd    time.Time // the lease end the reserve granted; zero until armed
	ok, failed  int
	failedTwice chan struct{}
}

var errBeatDown = errors.New("store unavailable (injected, heartbeats only)")

func (f *beatFailer) arm(leaseEnd time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.firstEnd, f.failedTwice = leaseEnd, make(chan struct{})
}

func (f *beatFailer) extended() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ok
}

func (f *beatFailer) apply(next store.ApplyFunc) store.ApplyFunc {
	return func(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
		if ev.Kind != core.EventHeartbeat {
			return next(ctx, scope, ev, p, out)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.firstEnd.IsZero() || time.Now().Before(f.firstEnd) {
			err := next(ctx, scope, ev, p, out)
			if err == nil && out.Transition.Decision.Kind == core.DecisionExtended {
				f.ok++
			}
			return err
		}
		if f.failed++; f.failed == 2 {
			close(f.failedTwice)
		}
		return errBeatDown
	}
}
