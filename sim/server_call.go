package sim

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// serverCall hosts one request's idem.Flow on a server: it performs each
// effect with latency and faults, on virtual time.
type serverCall struct {
	s      *server
	epoch  int
	att    *attempt
	scope  int32
	call   *idem.Flow
	token  core.Token // the attempt's own token, once granted
	hbStop bool
	// The attempt's lease, kept as Do's heart keeps it (idem.Lease), on
	// virtual time: sentAt is when main's last apply was sent (a lease it
	// grants starts there), beatSent and beatTimeout the heartbeat's under
	// way, tellArmed whether a check of the lease's TellBy is scheduled.
	lease       idem.Lease
	sentAt      int64
	beatSent    int64
	beatTimeout int64
	tellArmed   bool
	waiting     *waiter // the in-flight wait under way, if any
	// committed: the action completed in its own transaction and works on
	// (FaultCompleteInDiffers): told its lease is lost, it finishes anyway.
	committed bool
	watch     *flowWatch // what the checker notes (check_flow.go), from the pool as main is
	// detached: the apply under way is the attempt's outcome
	// (Effect.Detached), which the client's hanging up does not stop.
	detached bool
	// main runs every apply of the call, one at a time: taken from the
	// world's pool at the first and given back when the call answers (its
	// 300 bytes were a third of a call's, and most calls make few applies).
	main *opRun
	hb   *opRun // the heartbeat's, which runs beside the action: made at the first beat, as most actions end before one
	tx   *opRun // the action's own completion in its transaction (FaultCompleteInDiffers)
	// diverged: the action returned another response than the completion
	// it wrote in its own transaction (a caller that breaks CompleteIn's
	// contract): its Complete must be refused and Recorded false, and its
	// client's answer is the action's, not the stored one.
	diverged bool

	// The action's state.
	attempt    idem.Attempt
	pauseAfter bool
	actionDone bool
	gwResult   gatewayResult
	// buf is the gateway's answer as the server holds it, in a pooled
	// buffer handed to Complete: reused once the client's answer is sent.
	buf core.Response
}

// advance performs the Flow's next effect, as Executor.Do does: each
// apply on the client's context unless the Flow says it is the detached
// outcome, the action with the attempt's lease beside it, the wait, and the
// answer.
func (c *serverCall) advance() {
	switch eff := c.call.Next(); eff.Kind {
	case idem.EffectApply:
		if !eff.Detached && c.att.gone {
			c.call.Gone(context.Canceled) // the client hung up: its context is done
			c.advance()
			return
		}
		c.detached = eff.Detached
		c.s.w.check.flowEffect(c, eff) // check_flow.go
		c.mainRun().held = eff.Held
		c.sentAt = c.s.w.now
		c.apply(eff.Event)
	case idem.EffectRun:
		c.token = eff.Attempt.Token
		if c.s.crashes(c.scope) { // after reserve, before the side effect
			return
		}
		c.lease = c.call.Lease(hostTime(c.sentAt))
		c.s.w.check.leaseKept(c) // check_flow.go
		c.runAction(eff.Attempt)
	case idem.EffectWait:
		if c.att.gone {
			c.call.Gone(context.Canceled)
			c.advance()
			return
		}
		c.wait(eff)
	case idem.EffectAnswer:
		c.s.w.check.flowDone(c, eff) // check_flow.go
		if eff.Panic != nil {
			// Raised again once recorded: the server's handler dies with it,
			// and the client's connection drops without an answer.
			c.s.w.log(TraceEvent{Scope: c.scope, Actor: ActorServer, ActorID: c.s.id, What: WhatPanic, Token: c.token})
			c.end()
			return
		}
		if c.s.crashes(c.scope) { // after complete, before the response
			return
		}
		c.reply()
	}
}

func (c *serverCall) apply(ev core.Event) { c.run(c.mainRun(), evOpStep, ev) }

// mainRun is c's main opRun, taken from the pool at its first use.
func (c *serverCall) mainRun() *opRun {
	if c.main == nil {
		c.main = c.s.w.pools.opRuns.take()
	}
	return c.main
}

// end gives back what c took from the world's pools, once it answered:
// its Flow, watch and main run are not reached through c after that (a
// late step of its action finds the call over, see notExecuted), and they
// are nil, so that a path that did reach them would fail loudly rather
// than read another call's. A crashed call's are left to the collector,
// as its events may still come.
func (c *serverCall) end() {
	p := &c.s.w.pools
	p.putFlow(c.call)
	c.call = nil
	*c.watch = flowWatch{}
	p.watches.put(c.watch)
	c.watch = nil
	if c.main != nil {
		p.opRuns.put(c.main)
		c.main = nil
	}
}

// run starts applying ev in r, whose answers come as kind.
func (c *serverCall) run(r *opRun, kind uint8, ev core.Event) {
	w := c.s.w
	ev = w.ownerEvent(c.scope, ev)
	meta := opMeta{actor: ActorServer, actorID: c.s.id, scope: c.scope, event: ev.Kind, attempt: c.token}
	w.runOp(c, r, kind, meta, ev)
}

// Kinds of serverCall events.
const (
	evOpStep          uint8 = iota // the call's store answer arrived
	evHbStep                       // the heartbeat's store answer arrived
	evHbTick                       // time for the next heartbeat
	evActionRefused                // the gateway refused the connection
	evActionSend                   // the gateway request leaves (after a pause, if any)
	evActionTimeout                // the gateway call timed out
	evActionCancelled              // the client hung up mid-call
	evActionAtGateway              // the request reaches the gateway
	evActionAnswered               // the gateway's answer crosses the network
	evActionBack                   // the answer reaches the server
	evActionDone                   // the server goes on with it
	evOpResume                     // the call's next store call, after a pause between two
	evTxStep                       // the store's answer to the action's own completion (FaultCompleteInDiffers)
	evLeaseTell                    // the lease's TellBy: tell the action if no beat extended it
	evActionFinish                 // the action returns what it committed in its own transaction (after more work)
	evArmTell                      // arm the lease's timer, if the action still runs
)

func (c *serverCall) handle(kind uint8) {
	switch kind {
	case evOpStep:
		c.s.w.opAnswer(c, c.main, evOpStep)
	case evHbStep:
		c.s.w.opAnswer(c, c.hb, evHbStep)
	case evHbTick:
		c.beat()
	case evOpResume:
		c.s.w.opCall(c, c.main, evOpStep)
	case evTxStep:
		c.s.w.opAnswer(c, c.tx, evTxStep)
	case evLeaseTell:
		c.tellIfLost()
	case evActionFinish:
		c.finishAction(c.buf, nil, actionCompleted)
	case evArmTell:
		if !c.hbStop {
			c.armTell()
		}
	default:
		c.actionStep(kind)
	}
}

// hangUp hears that the call's client hung up (FaultDisconnect): the
// request's context is done. A running action is cancelled, a wait ends
// (the Flow is told Gone), and every apply not detached from the client
// is not made (advance); the answer is sent to nobody (reply).
func (c *serverCall) hangUp() {
	switch {
	case c.waiting != nil:
		c.waiting.wake()
	case c.attempt.Token != 0 && !c.actionDone:
		c.s.runEvent(event{h: c, kind: evActionCancelled, srv: c.s, epoch: c.epoch})
	}
}

// hostTime is the virtual instant t on a server's clock (the servers' clocks
// are the world's; the store's has its own grain and steps, clock.go).
func hostTime(t int64) time.Time { return epoch.Add(time.Duration(t)) }

// answer is what a client hears back.
type answer struct {
	status     int
	definitive bool          // a stored or replayed outcome, or 422
	response   core.Response // for a definitive outcome
	retryAfter int64
	kind       idem.ResultKind
	token      core.Token // the attempt whose outcome this is (its incarnation's, to the checkers)
	refused    bool       // bad input (FaultBadInput), refused before anything was stored
	diverged   bool       // the action's own answer, not the completion it stored (FaultCompleteInDiffers)
}

func toAnswer(r idem.Result, err error) answer {
	if err == nil {
		return answer{status: r.Response.StatusCode, definitive: true, response: r.Response, kind: r.Kind, token: r.Token}
	}
	if e, ok := errors.AsType[*idem.Error](err); ok { // As's target would escape: an allocation every answer
		return answer{status: e.Status, definitive: e.Code == idem.CodeKeyMisuse, retryAfter: int64(e.RetryAfter)}
	}
	return answer{status: http.StatusInternalServerError}
}

func (c *serverCall) reply() {
	m := &opMeta{} // no apply made: a call whose client left before its reserve
	if c.main != nil {
		m = &c.main.meta
	}
	c.s.w.check.life.recorded(c.scope, m, c.call)
	res, err := c.call.Result()
	if err != nil { // no answer at all is not in flight; the check's As would allocate
		c.s.w.check.inFlightAnswer(c.scope, err) // check_live.go
	}
	a := toAnswer(res, err)
	a.diverged = c.diverged && err == nil && res.Kind == idem.ResultExecuted
	if !c.att.gone { // else its client hung up: nobody hears it
		c.s.w.sendAnswer(c.s, c.att, a)
	}
	reuseBuffer(&c.buf)
	if err == nil && res.Kind == idem.ResultReplayed {
		// The Result is the server's to keep: it edits a replay in place
		// once sent (as a handler adding a header would). A flow that
		// handed out the store's own memory replays the edit next time.
		reuseBuffer(&res.Response)
	}
	c.end()
}

// sendAnswer sends a to the client of att, through the lossy network.
func (w *world) sendAnswer(s *server, att *attempt, a answer) {
	scope := att.req.scope
	a.response = copyResponseIn(&w.slabs, a.response) // what crosses the network: the client's own bytes
	if w.plant.corruptReplays && a.kind == idem.ResultReplayed && len(a.response.Body) > 0 {
		a.response = a.response.Clone()
		a.response.Body[0] ^= 1
	}
	w.log(TraceEvent{Scope: scope, Actor: ActorServer, ActorID: s.id, What: WhatReply, Arg: int64(a.status)})
	w.report.reply(a)
	if w.fault(FaultLostResponse, w.rng.net) {
		w.log(TraceEvent{Scope: scope, Actor: ActorServer, ActorID: s.id, What: WhatLost, Arg: 1})
		return
	}
	d := w.pools.deliveries.take()
	d.att, d.a = att, a
	w.afterH(w.netLatency(), d, 0)
}

// delivery is an answer on its way to its client: a handler from a pool,
// not a closure, which would allocate its captured answer every reply.
type delivery struct {
	att *attempt
	a   answer
}

func (d *delivery) handle(uint8) {
	att, a := d.att, d.a
	*d = delivery{}
	w := att.req.c.w
	w.pools.deliveries.put(d) // nothing refers to it once taken off the queue
	att.req.c.receive(att, a)
}

func timeSince(now, start int64) time.Duration { return time.Duration(now - start) }
