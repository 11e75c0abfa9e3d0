package sim

import (
	"context"
	"errors"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

var (
	errGatewayTimeout = errors.New("sim: gateway call timed out")
	errGatewayRefused = errors.New("sim: gateway refused the connection")
	errTxFailed       = errors.New("sim: the action's transaction (its completion) failed")
	errDeadlinePassed = errors.New("sim: gateway refused: deadline passed")
	errHandlerPanic   = errors.New("sim: the handler panicked after its gateway call")
)

// runAction is the caller's action: a charge through the payment gateway,
// with the attempt's lease end as the deadline the gateway enforces, and a
// heartbeat beside it. Its steps are serverCall events (evAction*), so that
// an action allocates no closures.
func (c *serverCall) runAction(at idem.Attempt) {
	w, s := c.s.w, c.s
	c.attempt = at
	w.check.gatewayCall(c.scope, at.Token)
	w.log(TraceEvent{Scope: c.scope, Actor: ActorServer, ActorID: s.id, What: WhatGatewayCall, Token: at.Token})
	c.heartbeat(c.lease.Interval())
	if now := hostTime(w.now); c.lease.TellBy().Before(now.Add(c.lease.Interval())) {
		c.armTell()
	} else {
		// Most actions end long before their lease: the lease's timer is
		// armed at the first beat's time (a lane, not the heap), which is
		// still before TellBy, whatever that beat does.
		w.afterOnH(s, c.epoch, int64(c.lease.Interval()), c, evArmTell)
	}
	if w.fault(FaultGatewayRefuse, w.rng.gateway) {
		w.afterOnH(s, c.epoch, w.netLatency(), c, evActionRefused)
		return
	}
	pauseBefore := false
	if s.mayPause() && w.fault(FaultPause, w.rng.servers) {
		pauseBefore = w.rng.servers.IntN(2) == 0
		c.pauseAfter = !pauseBefore
	}
	if pauseBefore {
		s.pause(c.scope) // a zombie that sends its request after its lease
	}
	s.runEvent(event{h: c, kind: evActionSend, srv: s, epoch: c.epoch})
}

// actionStep is one step of the action, by kind.
func (c *serverCall) actionStep(kind uint8) {
	w, s := c.s.w, c.s
	switch kind {
	case evActionRefused:
		c.finishAction(core.Response{}, c.notExecuted(errGatewayRefused), actionNotExecuted)
	case evActionSend:
		timeout := int64(w.cfg.GatewayTimeout)
		if c.att.req.long {
			timeout = longActionTimeout * int64(w.policy.LeaseDuration)
		}
		w.afterOnH(s, c.epoch, timeout, c, evActionTimeout)
		if w.fault(FaultGatewayTimeoutBefore, w.rng.gateway) {
			w.log(TraceEvent{Scope: c.scope, Actor: ActorGateway, What: WhatLost, Arg: 2})
			return
		}
		transit := w.netLatency()
		if w.fault(FaultGatewayStall, w.rng.gateway) {
			// Long-tailed: the request is still on its way when the server
			// gives up, the sweeper marks the attempt unknown, and the
			// reconciler looks at the ledger.
			lease := int64(w.policy.LeaseDuration)
			transit += lease/2 + w.rng.gateway.Int64N(lease*3/2)
			w.log(TraceEvent{Scope: c.scope, Actor: ActorGateway, What: WhatStall, Token: c.attempt.Token, Arg: transit})
		}
		w.afterH(transit, c, evActionAtGateway)
	case evActionTimeout:
		c.finishAction(core.Response{}, errGatewayTimeout, actionUnknown)
	case evActionCancelled:
		c.finishAction(core.Response{}, context.Canceled, actionUnknown)
	case evActionAtGateway: // the gateway's own event: no server's crash or pause stops it
		c.gwResult = w.gateway.handle(w, c.scope, c.att.req, c.attempt.Token, c.attempt.LockedUntil)
		work := w.gatewayLatency()
		if c.att.req.long {
			lease := int64(w.policy.LeaseDuration)
			work = lease/2 + w.rng.gateway.Int64N(lease*3/2)
		}
		w.afterH(work+w.netLatency(), c, evActionAnswered)
	case evActionAnswered: // the network's
		if c.gwResult.charge != nil && w.fault(FaultGatewayTimeoutAfter, w.rng.gateway) {
			w.log(TraceEvent{Scope: c.scope, Actor: ActorGateway, What: WhatLost, Arg: 3})
			return
		}
		s.runEvent(event{h: c, kind: evActionBack, srv: s, epoch: c.epoch})
	case evActionBack:
		if c.pauseAfter && s.mayPause() {
			s.pause(c.scope) // a zombie: it wakes after its lease and tries to complete
		}
		s.runEvent(event{h: c, kind: evActionDone, srv: s, epoch: c.epoch})
	case evActionDone:
		if c.gwResult.charge == nil {
			c.finishAction(core.Response{}, c.notExecuted(errDeadlinePassed), actionNotExecuted)
			return
		}
		c.buf = copyResponseIn(&w.slabs, c.gwResult.charge.response())
		if len(c.buf.Headers) > 0 && w.fault(FaultCompleteInDiffers, w.rng.servers) {
			// The handler writes its business row and the completion in one
			// transaction (Attempt.CompleteIn), then returns the response.
			if c.tx == nil {
				c.tx = new(opRun)
			}
			c.run(c.tx, evTxStep, core.Event{Kind: core.EventComplete, Token: c.attempt.Token, Response: copyResponseIn(&w.slabs, c.buf)})
			return
		}
		c.finishAction(c.buf, nil, actionCompleted)
	}
}

// txDone hears the store answer the action's own completion: written, the
// action returns the response with one header value changed on half the
// draws (a handler that sets a header after its transaction committed), the
// same response on the others; not written, the transaction failed and the
// action reports an error, as such a handler would.
func (c *serverCall) txDone(a *store.Applied, err error) {
	w := c.s.w
	if err != nil || a.Transition.Decision.Kind != core.DecisionCompleted {
		c.finishAction(core.Response{}, errTxFailed, actionUnknown)
		return
	}
	if w.rng.servers.IntN(2) == 0 {
		for i := range c.buf.Headers {
			if h := &c.buf.Headers[i]; h.Name != "X-Payload" { // the checkers read which payload an answer is for there
				h.Value += "; handler"
				c.diverged = true
				break
			}
		}
	}
	if w.rng.servers.IntN(2) == 0 {
		// The handler goes on working after its transaction committed
		// (a notification to send, say), for half a lease to a lease and a
		// half: its heartbeat finds the record completed, no longer in
		// progress, and the lease lost for good; having committed, the
		// handler finishes anyway.
		c.committed = true
		lease := int64(w.policy.LeaseDuration)
		w.afterOnH(c.s, c.epoch, lease/2+w.rng.servers.Int64N(lease), c, evActionFinish)
		return
	}
	c.finishAction(c.buf, nil, actionCompleted)
}

// finishAction ends the action with its first outcome; later ones (a
// timeout after the answer, say) are ignored.
func (c *serverCall) finishAction(resp core.Response, err error, how int64) {
	w, s := c.s.w, c.s
	if c.actionDone {
		return
	}
	c.actionDone = true
	c.hbStop = true
	if how == actionCompleted && w.fault(FaultActionPanic, w.rng.servers) {
		// The handler panics after its gateway call answered: what it did
		// is not known, and the panic is the Flow's to record.
		resp, err, how = core.Response{}, &idem.PanicError{Value: errHandlerPanic}, actionPanicked
	}
	w.log(TraceEvent{Scope: c.scope, Actor: ActorServer, ActorID: s.id, What: WhatActionEnded, Token: c.attempt.Token, Arg: how})
	w.check.actionEnded(c, how) // check_flow.go
	if s.crashes(c.scope) {     // after the side effect, before complete
		return
	}
	c.call.Ran(resp, w.actionError(err, how))
	c.advance()
}

// notExecuted is the action's "definitely not executed" for err, with an
// error code (check_input.go draws it, bad ones under FaultBadInput).
func (c *serverCall) notExecuted(err error) error {
	code := c.s.w.notExecutedCode()
	if c.watch != nil { // nil: the call already answered (its action timed out first), and nothing reads it
		c.watch.code = code
	}
	return &idem.NotExecutedError{Err: err, Code: idem.ErrorCode(code)}
}

const (
	actionCompleted int64 = iota
	actionNotExecuted
	actionUnknown
	actionPanicked
)
