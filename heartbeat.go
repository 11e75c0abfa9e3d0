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
// could not extend it before it ended. The action should stop: another
// attempt may run the key as soon as the reconciler proves this one did
// nothing.
var ErrLeaseLost = errors.New("idem: the attempt's lease was lost")

// heart extends one running attempt's lease. It starts no goroutine of its
// own: its timer fires only when the action outlives a heartbeat interval,
// so that the common short action costs one timer reset and one stop. Hearts
// are pooled with their timers.
type heart struct {
	e      *Executor
	timer  *time.Timer
	mu     sync.Mutex // held by a beat, so that stop waits for one under way
	on     bool       // beating for an attempt
	scope  Scope
	token  Token
	cancel context.CancelCauseFunc
	// leaseEnd is when the lease ends, on the host's clock: the store's
	// lease end less the store's time at the last extension, from then.
	leaseEnd time.Time
	applied  store.Applied
}

var heartPool sync.Pool

// startHeartbeat arms a heart for at, which calls cancel when the lease is
// lost.
func (e *Executor) startHeartbeat(at Attempt, cancel context.CancelCauseFunc) *heart {
	h, _ := heartPool.Get().(*heart)
	if h == nil {
		h = &heart{}
		h.timer = time.AfterFunc(time.Hour, h.beat)
		h.timer.Stop()
	}
	h.mu.Lock()
	h.e, h.on, h.scope, h.token, h.cancel = e, true, at.Scope, at.Token, cancel
	h.leaseEnd = time.Now().Add(at.leaseLeft)
	h.timer.Reset(e.heartbeatInterval)
	h.mu.Unlock()
	return h
}

// stop ends the heartbeat, waiting for a beat under way, and pools h.
func (h *heart) stop() {
	h.timer.Stop()
	h.mu.Lock()
	h.on = false
	h.timer.Stop() // a beat that was under way may have armed the next one
	h.e, h.cancel, h.applied = nil, nil, store.Applied{}
	h.mu.Unlock()
	heartPool.Put(h)
}

// beat extends the lease once, in the timer's goroutine, and arms the next
// beat unless the lease is lost.
func (h *heart) beat() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.on {
		return
	}
	e := h.e
	ctx, cancel := context.WithTimeout(context.Background(), e.heartbeatInterval)
	err := store.Apply(ctx, e.store, h.scope, core.Event{Kind: core.EventHeartbeat, Token: h.token}, &e.policy, &h.applied)
	cancel()
	now := time.Now()
	switch {
	case !heartbeatDone(e.metrics, h.scope, &h.applied, err):
		h.lost(ErrLeaseLost) // taken over, or no longer in progress: for good
		return
	case err == nil:
		h.leaseEnd = now.Add(h.applied.Record.LockedUntil.Sub(h.applied.Now))
	case !now.Before(h.leaseEnd):
		h.lost(errors.Join(ErrLeaseLost, err)) // the store failed until the lease ended
		return
	}
	h.timer.Reset(min(e.heartbeatInterval, max(h.leaseEnd.Sub(now), time.Millisecond)))
}

func (h *heart) lost(cause error) {
	h.on = false
	h.cancel(cause)
}

// heartbeatDone counts a heartbeat's outcome and says whether the attempt
// still holds its lease: a store error leaves that open, any answer but
// Extended means it is lost for good.
func heartbeatDone(m Metrics, scope Scope, a *store.Applied, err error) bool {
	count(m, scope, core.EventHeartbeat, a, err)
	return err != nil || a.Transition.Decision.Kind == core.DecisionExtended
}
