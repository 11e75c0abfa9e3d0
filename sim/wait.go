package sim

import (
	"context"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// A server's in-flight wait (SPEC §5: a request that finds its key in
// flight may wait for the running attempt) goes through the memory store's
// own Wait, so that the store's promise to wake its waiters on a write is
// what ends it. Wait blocks, and the simulator runs in one goroutine: each
// wait runs in a goroutine of its own, and at every write to its scope the
// world takes the wait's answer before it goes on (a handshake, so a run
// stays a function of its seed). A store that does not wake its waiters
// would leave them to their timeout: a request that waited while the
// attempt completed would get the replay only at the end of its wait, or
// 409. The checker holds that a write ends every wait on its record
// (checker.notWoken).

// waiter is a server call waiting for a record to change, or for its time.
type waiter struct {
	fired  bool
	fn     func()
	call   *serverCall
	status core.Status // the record's status as the wait began
	done   chan error  // the store's Wait answers here; nil once taken
	cancel context.CancelFunc
}

// wakeBound is how long the world waits, in wall time, for a waiter's Wait
// to return after a write changed its record: a woken goroutine returns in
// microseconds, so only a store that never woke it takes that long.
const wakeBound = time.Second

func (wt *waiter) wake() {
	if !wt.fired {
		wt.fired = true
		wt.stop()
		wt.fn()
	}
}

// stop ends the waiter's Wait, if it still runs, and takes its answer.
func (wt *waiter) stop() {
	if wt.done != nil {
		wt.cancel()
		<-wt.done
		wt.done = nil
	}
}

// woken reports whether the waiter's Wait returned: it should have, as the
// record it waits on was just written.
func (wt *waiter) woken() bool {
	if wt.done == nil {
		return true
	}
	t := time.NewTimer(wakeBound)
	defer t.Stop()
	select {
	case <-wt.done:
		wt.done = nil
		return true
	case <-t.C:
		return false
	}
}

func (c *serverCall) wait(eff *idem.Effect) {
	w := c.s.w
	start := w.now
	wt := &waiter{call: c, status: w.shadow[c.scope].Status}
	c.waiting = wt
	w.check.flowWait(c, eff) // check_flow.go
	wt.fn = func() {
		c.s.run(c.epoch, func() {
			c.waiting = nil
			w.check.flowWaited(c, start) // check_flow.go
			if c.att.gone {              // the client hung up: Do's wait ends on its context
				c.call.Gone(context.Canceled)
			} else {
				c.call.Waited(timeSince(w.now, start))
			}
			c.advance()
		})
	}
	scope := w.scopes[c.scope]
	// The record may have changed since the reserve that answered in
	// flight: a Wait that cannot block (its context is done) says so
	// without a goroutine. It returns nil only if the record changed.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if w.mem.Wait(done, scope, eff.Version, eff.Token) == nil {
		w.after(0, wt.wake)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	wt.done, wt.cancel = make(chan error, 1), stop
	go func(ch chan<- error) { ch <- w.mem.Wait(ctx, scope, eff.Version, eff.Token) }(wt.done)
	w.waiters[c.scope] = append(w.waiters[c.scope], wt)
	w.after(int64(eff.Wait), wt.wake)
}

// wakeWaiters hears a write to scope (rec is what it wrote) and wakes the
// calls whose Wait it ended.
func (w *world) wakeWaiters(scope int32, rec *core.Record) {
	waiting := w.waiters[scope]
	if len(waiting) == 0 {
		return
	}
	// Waking a call may run it on at once, and its next wait or write
	// comes back here: the list is taken out first.
	w.waiters[scope] = nil
	var kept []*waiter
	for _, wt := range waiting {
		if wt.fired {
			continue
		}
		if wt.woken() {
			wt.wake()
			continue
		}
		w.check.notWoken(wt, rec)
		kept = append(kept, wt)
	}
	w.waiters[scope] = append(kept, w.waiters[scope]...)
}

// endWaits ends the goroutines of the waits still under way as the run ends.
func (w *world) endWaits() {
	for _, waiting := range w.waiters {
		for _, wt := range waiting {
			wt.stop()
		}
	}
}

// notWoken hears that a write to the record a call waits on did not end
// its Wait (invariant 6): the call would wait out its in-flight wait, and
// answer 409 or the replay late, though the record changed (completed,
// perhaps) at once.
func (c *checker) notWoken(wt *waiter, rec *core.Record) {
	c.fail(6, wt.call.scope, "a write (the record %v, now %v) did not wake the request waiting on it", wt.status, rec.Status)
}
