package sim

import (
	"context"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// A server's in-flight wait (SPEC §5: a request that finds its key in
// flight may wait for the running attempt) ends on the memory store's own
// change notification (memstore's Changed, the channel its Wait selects
// on), so that the store's promise to wake its waiters on a write is what
// ends it. The channel is closed under the store's lock by the write
// itself: at every write to its scope the world looks whether it was, with
// no goroutine and no wall time, so a run stays a function of its seed. A
// store that does not wake its waiters would leave them to their timeout:
// a request that waited while the attempt completed would get the replay
// only at the end of its wait, or 409. The checker holds that a write ends
// every wait on its record (checker.notWoken).

// waiter is a server call waiting for a record to change, or for its time.
type waiter struct {
	fired   bool
	fn      func()
	call    *serverCall
	status  core.Status     // the record's status as the wait began
	changed <-chan struct{} // the store's change notification for the record
}

func (wt *waiter) wake() {
	if !wt.fired {
		wt.fired = true
		wt.fn()
	}
}

// woken reports whether the store closed the waiter's channel: it should
// have, as the record it waits on was just written.
func (wt *waiter) woken() bool {
	select {
	case <-wt.changed:
		return true
	default:
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
	// The record may have changed since the reserve that answered in
	// flight: then the channel is closed already.
	wt.changed = w.mem.Changed(w.scopes[c.scope], eff.Version, eff.Token)
	if wt.woken() {
		w.after(0, wt.wake)
		return
	}
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

// notWoken hears that a write to the record a call waits on did not end
// its Wait (invariant 6): the call would wait out its in-flight wait, and
// answer 409 or the replay late, though the record changed (completed,
// perhaps) at once.
func (c *checker) notWoken(wt *waiter, rec *core.Record) {
	c.fail(6, wt.call.scope, "a write (the record %v, now %v) did not wake the request waiting on it", wt.status, rec.Status)
}
