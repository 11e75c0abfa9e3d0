package idem

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// ErrLeaseLost is the cause (context.Cause) of an action's cancelled
// context when its attempt lost the lease: a heartbeat found the record
// taken over (the sweeper marked it unknown, the reconciler settled it), or
// no heartbeat extended it before it ended. The action should stop: another
// attempt may run the key as soon as the reconciler proves this one did
// nothing.
var ErrLeaseLost = errors.New("idem: the attempt's lease was lost")

// leaseMargin is how long before the end of its lease, as the executor
// last knew it, an attempt is told it lost the lease when no heartbeat
// extended it: a twentieth of the lease, at most a second. The end is
// already reckoned from when the call that granted it was sent (the store
// read its clock after that); the margin covers what the host's timers and
// scheduler add.
func leaseMargin(lease time.Duration) time.Duration { return min(lease/20, time.Second) }

// heart extends one running attempt's lease, and tells the action when the
// lease is lost, whatever the store does. It starts no goroutine of its
// own: its two timers fire only when the action outlives a heartbeat
// interval or its lease, so that the common short action costs two timer
// resets and two stops. A beat's store call runs without the mutex, on a
// context that stop cancels, so that neither stop nor the lease's timer
// ever waits for a store that hangs. Hearts are pooled with their timers.
type heart struct {
	e         *Executor
	beatTimer *time.Timer // the next heartbeat
	lostTimer *time.Timer // the lease's end less the margin, unless a beat extends it

	mu      sync.Mutex // guards what follows; never held across a store call
	on      bool       // beating for an attempt, whose action has not been told
	beating bool       // a beat's store call is under way: stop leaves h to it
	scope   Scope
	token   Token
	cancel  context.CancelCauseFunc
	// leaseEnd is when the lease ends, on the host's clock: the store's
	// lease end less the store's time at the call that granted it, from
	// when that call was sent.
	leaseEnd  time.Time
	lastErr   error              // the last beat's store error, for the cause
	endBeat   context.CancelFunc // ends the store call of the beat under way
	applied   store.Applied      // the beat's, used without the mutex while beating
	heartbeat time.Duration
}

var heartPool sync.Pool

// startHeartbeat arms a heart for at, whose lease was granted by a call sent
// at sent, and which calls cancel when the lease is lost.
func (e *Executor) startHeartbeat(at Attempt, sent time.Time, cancel context.CancelCauseFunc) *heart {
	h, _ := heartPool.Get().(*heart)
	if h == nil {
		h = &heart{}
		h.beatTimer = time.AfterFunc(time.Hour, h.beat)
		h.beatTimer.Stop()
		h.lostTimer = time.AfterFunc(time.Hour, h.leaseEnded)
		h.lostTimer.Stop()
	}
	h.mu.Lock()
	h.e, h.on, h.scope, h.token, h.cancel, h.lastErr = e, true, at.Scope, at.Token, cancel, nil
	h.heartbeat = e.heartbeatInterval
	h.leaseEnd = sent.Add(at.leaseLeft)
	h.beatTimer.Reset(h.heartbeat)
	h.lostTimer.Reset(h.untilLost(time.Now()))
	h.mu.Unlock()
	return h
}

// untilLost is how long from now the action may go on without news.
func (h *heart) untilLost(now time.Time) time.Duration {
	return h.leaseEnd.Add(-leaseMargin(h.e.policy.LeaseDuration)).Sub(now)
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
func (h *heart) release() { h.e, h.applied, h.lastErr = nil, store.Applied{}, nil }

// leaseEnded runs in the lost timer's goroutine: no beat extended the lease
// in time (they failed, or one hangs in the store).
func (h *heart) leaseEnded() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.on {
		return
	}
	if left := h.untilLost(time.Now()); left > 0 {
		h.lostTimer.Reset(left) // a beat extended the lease meanwhile, or a pooled timer fired late
		return
	}
	h.lost(errors.Join(ErrLeaseLost, h.lastErr))
}

// beat extends the lease once, in the beat timer's goroutine, and arms the
// next beat unless the lease is lost.
func (h *heart) beat() {
	h.mu.Lock()
	if !h.on || h.beating {
		h.mu.Unlock()
		return
	}
	e, scope, token := h.e, h.scope, h.token
	// No beat outlives the lease it is trying to extend: by then the
	// action has been told.
	ctx, cancel := context.WithTimeout(context.Background(), min(h.heartbeat, max(h.untilLost(time.Now()), time.Millisecond)))
	h.beating, h.endBeat = true, cancel
	h.mu.Unlock()

	sent := time.Now()
	err := store.Apply(ctx, e.store, scope, core.Event{Kind: core.EventHeartbeat, Token: token}, &e.policy, &h.applied)
	cancel()
	held := heartbeatDone(e.metrics, scope, &h.applied, err)

	h.mu.Lock()
	h.beating = false
	if !h.on { // stopped while the store call was under way
		h.release()
		h.mu.Unlock()
		heartPool.Put(h)
		return
	}
	switch {
	case !held:
		h.lost(ErrLeaseLost) // taken over, or no longer in progress: for good
	case err == nil:
		h.leaseEnd, h.lastErr = sent.Add(h.applied.Record.LockedUntil.Sub(h.applied.Now)), nil
		h.lostTimer.Reset(h.untilLost(time.Now()))
		h.beatTimer.Reset(h.heartbeat)
	default:
		// The lease timer tells the action if no later beat succeeds;
		// until then, try again sooner than a whole interval.
		h.lastErr = err
		h.beatTimer.Reset(min(h.heartbeat, max(h.untilLost(time.Now())/2, time.Millisecond)))
	}
	h.mu.Unlock()
}

// lost tells the action, once, with h.mu held.
func (h *heart) lost(cause error) {
	h.on = false
	h.beatTimer.Stop()
	h.lostTimer.Stop()
	h.cancel(cause)
	h.cancel = nil
}

// heartbeatDone counts a heartbeat's outcome and says whether the attempt
// still holds its lease: a store error leaves that open, any answer but
// Extended means it is lost for good.
func heartbeatDone(m Metrics, scope Scope, a *store.Applied, err error) bool {
	count(m, scope, core.EventHeartbeat, a, err)
	return err != nil || a.Transition.Decision.Kind == core.DecisionExtended
}
