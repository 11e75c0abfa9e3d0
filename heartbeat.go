package idem

import (
	"context"
	"sync"
	"time"

	"github.com/idemkit/idem/store"
)

// heart keeps a running attempt's Lease in real time, beside the action,
// and tells the action when the lease is lost, whatever the store does:
// the Lease decides, the heart only keeps its timers. It starts no
// goroutine of its own: its two timers fire only when the action outlives
// a heartbeat interval or its lease, so that the common short action costs
// two timer resets and two stops. A beat's store call runs without the
// mutex, on a context that stop cancels, so that neither stop nor the
// lease's timer ever waits for a store that hangs. Hearts are pooled with
// their timers.
type heart struct {
	store     store.Store
	policy    *Policy
	beatTimer *time.Timer // the next heartbeat
	lostTimer *time.Timer // the lease's TellBy, unless a beat extends it

	mu      sync.Mutex // guards what follows; never held across a store call
	on      bool       // beating for an attempt, whose action has not been told
	beating bool       // a beat's store call is under way: stop leaves h to it
	scope   Scope
	lease   Lease
	cancel  context.CancelCauseFunc
	endBeat context.CancelFunc // ends the store call of the beat under way
	applied store.Applied      // the beat's, used without the mutex while beating
}

var heartPool sync.Pool

// startHeartbeat arms a heart for the lease of an attempt of scope over e's
// store, which calls cancel when the lease is lost.
func (e *Executor) startHeartbeat(scope Scope, lease Lease, cancel context.CancelCauseFunc) *heart {
	h, _ := heartPool.Get().(*heart)
	if h == nil {
		h = &heart{}
		h.beatTimer = time.AfterFunc(time.Hour, h.beat)
		h.beatTimer.Stop()
		h.lostTimer = time.AfterFunc(time.Hour, h.leaseEnded)
		h.lostTimer.Stop()
	}
	h.mu.Lock()
	h.store, h.policy, h.on, h.scope, h.lease, h.cancel = e.store, &e.cfg.Policy, true, scope, lease, cancel
	h.beatTimer.Reset(lease.Interval())
	h.lostTimer.Reset(time.Until(lease.TellBy()))
	h.mu.Unlock()
	return h
}

// stop ends the heartbeat without waiting for anything: a beat under way is
// told to end, and pools h itself when its store call returns.
func (h *heart) stop() {
	h.beatTimer.Stop()
	h.lostTimer.Stop()
	h.mu.Lock()
	h.on, h.cancel = false, nil
	if h.beating {
		h.endBeat()
		h.mu.Unlock()
		return
	}
	h.release()
	h.mu.Unlock()
	heartPool.Put(h)
}

// release drops what h holds of its attempt, with h.mu held.
func (h *heart) release() {
	h.store, h.policy, h.scope, h.lease, h.applied = nil, nil, Scope{}, Lease{}, store.Applied{}
}

// leaseEnded runs in the lost timer's goroutine: no beat extended the lease
// in time (they failed, or one hangs in the store).
func (h *heart) leaseEnded() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.on {
		h.tellIfLost(time.Now())
	}
}

// tellIfLost tells the action if its lease is lost at now, else arms the
// lost timer for the lease's TellBy, with h.mu held.
func (h *heart) tellIfLost(now time.Time) bool {
	cause, lost := h.lease.Lost(now)
	if !lost {
		h.lostTimer.Reset(h.lease.TellBy().Sub(now)) // a beat extended the lease meanwhile, or a pooled timer fired late
		return false
	}
	h.on = false
	h.beatTimer.Stop()
	h.lostTimer.Stop()
	h.cancel(cause)
	h.cancel = nil
	return true
}

// beat extends the lease once, in the beat timer's goroutine, and arms the
// next beat unless the lease is lost.
func (h *heart) beat() {
	h.mu.Lock()
	if !h.on || h.beating {
		h.mu.Unlock()
		return
	}
	sent := time.Now()
	ev := h.lease.Event()
	ctx, cancel := context.WithTimeout(context.Background(), h.lease.BeatTimeout(sent))
	h.beating, h.endBeat = true, cancel
	s, scope, p := h.store, h.scope, h.policy
	h.mu.Unlock()

	err := store.Apply(ctx, s, scope, ev, p, &h.applied)
	cancel()

	h.mu.Lock()
	h.beating = false
	if !h.on { // stopped while the store call was under way
		h.release()
		h.mu.Unlock()
		heartPool.Put(h)
		return
	}
	now := time.Now()
	next := h.lease.Beaten(sent, now, &h.applied, err)
	if !h.tellIfLost(now) {
		h.beatTimer.Reset(next)
	}
	h.mu.Unlock()
}
