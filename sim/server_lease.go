package sim

import (
	"context"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// heartbeat schedules the attempt's next beat d from now, as Do's heart
// does, unless FaultHeartbeatStall holds it back by a lease or two (a beat
// stuck behind a starved process, or a store call that hangs): the lease's
// TellBy must then tell the action, before the lease ends, whatever the
// beats do.
func (c *serverCall) heartbeat(d time.Duration) {
	w := c.s.w
	if w.fault(FaultHeartbeatStall, w.rng.servers) {
		lease := int64(w.policy.LeaseDuration)
		d += time.Duration(lease + w.rng.servers.Int64N(lease))
		w.log(TraceEvent{Scope: c.scope, Actor: ActorServer, ActorID: c.s.id, What: WhatStall, Token: c.token, Arg: int64(d)})
	}
	w.afterOnH(c.s, c.epoch, int64(d), c, evHbTick)
}

// armTell schedules a look at the lease at its TellBy, unless one is
// scheduled: it schedules the next itself when a beat moved TellBy on.
func (c *serverCall) armTell() {
	if c.tellArmed {
		return
	}
	c.tellArmed = true
	w := c.s.w
	w.afterOnH(c.s, c.epoch, max(c.lease.TellBy().Sub(hostTime(w.now)), 0).Nanoseconds(), c, evLeaseTell)
}

// tellIfLost is the lease's timer: the action is told when its lease is
// lost, else the timer waits for the lease's new TellBy.
func (c *serverCall) tellIfLost() {
	c.tellArmed = false
	if c.hbStop {
		return
	}
	if cause, lost := c.lease.Lost(hostTime(c.s.w.now)); lost {
		c.leaseLost(cause)
		return
	}
	c.armTell()
}

// leaseLost tells the action, which stops waiting for the gateway and
// reports that it may have executed (cause, as context.Cause would give
// it), as the executor cancels the action's context.
func (c *serverCall) leaseLost(cause error) {
	w := c.s.w
	c.hbStop = true
	w.log(TraceEvent{Scope: c.scope, Actor: ActorServer, ActorID: c.s.id, What: WhatLeaseLost, Token: c.token})
	w.check.told(c) // check_flow.go
	if c.committed || w.rates[FaultActionDeaf] > 0 && w.rng.servers.IntN(2) == 0 {
		// On the seeds that draw deaf actions, half of them do not look at
		// their context (a lease is lost too seldom for a fault's rate to
		// reach it): the action goes on, and returns
		// what its gateway call answers, as a late owner (its completion or
		// failure must be refused as stale once the key moved on).
		return
	}
	c.finishAction(core.Response{}, cause, actionUnknown)
}

func (c *serverCall) beat() {
	if c.hbStop {
		return
	}
	w := c.s.w
	w.check.acts(c.scope, c.token, "heartbeat")
	if c.hb == nil {
		c.hb = new(opRun)
	}
	c.beatSent = w.now
	c.beatTimeout = c.lease.BeatTimeout(hostTime(w.now)).Nanoseconds()
	c.run(c.hb, evHbStep, c.lease.Event())
}

// beaten hears how a heartbeat went. An answer later than the beat's
// timeout is the timeout's error (Do's heart gave up on the call, whatever
// it did). The next beat is due unless the lease is lost.
func (c *serverCall) beaten(a *store.Applied, err error) {
	w := c.s.w
	if c.hbStop {
		return
	}
	w.check.beaten(c.scope, c.token, a, err)
	if w.now-c.beatSent > c.beatTimeout {
		err = context.DeadlineExceeded
	}
	now := hostTime(w.now)
	next := c.lease.Beaten(hostTime(c.beatSent), now, a, err)
	w.check.flowBeat(c, c.beatSent, a, err) // check_flow.go
	if cause, lost := c.lease.Lost(now); lost {
		c.leaseLost(cause)
		return
	}
	c.heartbeat(next)
}
