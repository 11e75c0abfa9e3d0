package sim

import (
	"context"
	"errors"
	"net/http"
	"time"

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

// server is one API server. A crash bumps its epoch: every event scheduled
// for an older epoch is dropped, which is what losing a process's memory
// looks like. A pause defers its events.
type server struct {
	w           *world
	id          int32
	alive       bool
	epoch       int
	pausedFrom  int64 // the last pause: from when
	pausedUntil int64 // to when (a later time than now: paused)
	quietUntil  int64 // no crash before this: a cluster that is mostly down tests little
}

// at schedules fn on the server d from now.
func (s *server) at(epoch int, d int64, fn func()) { s.w.afterOn(s, epoch, d, fn) }

// run runs fn now unless the server crashed since epoch; while the server is
// paused, fn waits for the pause to end.
func (s *server) run(epoch int, fn func()) { s.runEvent(event{fn: fn, srv: s, epoch: epoch}) }

func (s *server) runEvent(e event) {
	if s.epoch != e.epoch || !s.alive || s.w.stopped {
		return
	}
	if s.w.now < s.pausedUntil {
		s.w.schedule(s.pausedUntil-s.w.now, e)
		return
	}
	e.fire()
}

// crashes decides whether the server dies at this step boundary.
func (s *server) crashes(scope int32) bool {
	if s.w.now < s.quietUntil || !s.w.fault(FaultCrash, s.w.rng.servers) {
		return false
	}
	s.epoch++
	s.alive = false
	s.w.log(TraceEvent{Scope: scope, Actor: ActorServer, ActorID: s.id, What: WhatCrash})
	s.w.after(int64(s.w.cfg.RestartDelay), func() {
		s.alive = true
		s.quietUntil = s.w.now + int64(s.w.cfg.CrashQuiet)
		s.w.reconfigure()
		s.w.log(TraceEvent{Scope: -1, Actor: ActorServer, ActorID: s.id, What: WhatRestart})
	})
	return true
}

// pause freezes the server for longer than a lease: a zombie owner.
func (s *server) pause(scope int32) {
	lease := int64(s.w.policy.LeaseDuration)
	d := lease + lease/2 + s.w.rng.servers.Int64N(lease*3/2)
	s.pausedFrom, s.pausedUntil = s.w.now, s.w.now+d
	s.w.log(TraceEvent{Scope: scope, Actor: ActorServer, ActorID: s.id, What: WhatPause, Arg: d})
}

// pausedOver reports whether the server's last pause overlapped the
// virtual interval from..to: its timers could not fire in time.
func (s *server) pausedOver(from, to int64) bool { return s.pausedUntil > from && s.pausedFrom < to }

// pauseLong freezes the server for a lease or, half the time, for as long
// as a record takes to expire and be removed (a lease, the TTL, the
// tombstone retention and a sweep) and a little more: a zombie that wakes
// when its key may have a new record. A TTL too long for a run's time
// gives a normal pause.
func (s *server) pauseLong(scope int32) {
	p := &s.w.policy
	life := p.LeaseDuration + p.TTL + p.TombstoneRetention + s.w.cfg.SweepEvery
	if life > 20*time.Second || s.w.rng.servers.IntN(2) == 0 {
		s.pause(scope)
		return
	}
	d := int64(life) + s.w.rng.servers.Int64N(int64(2*time.Second))
	s.pausedFrom, s.pausedUntil = s.w.now, s.w.now+d
	s.w.log(TraceEvent{Scope: scope, Actor: ActorServer, ActorID: s.id, What: WhatPause, Arg: d})
}

// ownerWrite reports whether k is an event an attempt's owner writes with
// its token.
func ownerWrite(k core.EventKind) bool {
	return k == core.EventComplete || k == core.EventFail || k == core.EventMarkUnknown
}

// receive is a request (copy 0 or 1 of att) arriving from a
// client: served now, or once the server's pause ends.
func (s *server) receive(att *attempt, copy uint8) {
	if !s.alive {
		s.w.afterH(s.w.netLatency(), att, evRefused)
		return
	}
	s.runEvent(event{h: att, kind: evServe0 + copy, srv: s, epoch: s.epoch})
}

// serve starts a request on the server.
func (s *server) serve(att *attempt) {
	w := s.w
	if s.crashes(att.req.scope) { // before reserve
		return
	}
	if w.cfg.Baseline == BaselineNaive {
		s.naive(s.epoch, att)
		return
	}
	useCase := att.req.useCase
	if w.plant.fingerprintOneUseCase {
		useCase = 0
	}
	fp, err := att.fingerprint(w.payloads.specs[useCase][att.req.version])
	if err != nil {
		w.check.fingerprintRefused(att, err)
		return
	}
	w.check.fingerprint(att.req, fp)
	if w.cfg.Baseline == BaselineNoFingerprint {
		fp = w.requestFingerprint(att.req)
	}
	key := att.req.key
	if att.req.badKey != "" {
		key.Key = att.req.badKey
	}
	c := &serverCall{s: s, epoch: s.epoch, att: att, scope: att.req.scope, call: w.pools.flow()}
	err = w.ex.BeginIn(c.call, idem.Request{Scope: key, Fingerprint: fp})
	w.check.begun(att.req, key.Key, err)
	if err != nil && att.req.badKey != "" {
		w.foreignReserve(key, fp) // foreign.go: a host with only the core's refusals
	}
	if w.fault(FaultBadInput, w.rng.servers) {
		w.foreignCode(att.req.scope)
	}
	if err != nil {
		// Bad input: refused for good, and the client does not send it again.
		w.pools.putFlow(c.call)
		a := toAnswer(idem.Result{}, err)
		a.definitive, a.refused = true, true
		w.sendAnswer(s, att, a)
		return
	}
	att.calls = append(att.calls, c)
	c.advance()
}

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
	watch     flowWatch // what the checker notes (check_flow.go)
	// detached: the apply under way is the attempt's outcome
	// (Effect.Detached), which the client's hanging up does not stop.
	detached bool
	main     opRun  // every apply of the call, one at a time
	hb       *opRun // the heartbeat's, which runs beside the action: made at the first beat, as most actions end before one
	tx       *opRun // the action's own completion in its transaction (FaultCompleteInDiffers)
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
		c.main.held = eff.Held
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
			c.s.w.pools.putFlow(c.call)
			c.call = nil
			return
		}
		if c.s.crashes(c.scope) { // after complete, before the response
			return
		}
		c.reply()
	}
}

func (c *serverCall) apply(ev core.Event) { c.run(&c.main, evOpStep, ev) }

// run starts applying ev in r, whose answers come as kind.
func (c *serverCall) run(r *opRun, kind uint8, ev core.Event) {
	w := c.s.w
	ev = w.ownerEvent(c.scope, ev)
	meta := opMeta{actor: ActorServer, actorID: c.s.id, scope: c.scope, event: ev.Kind, attempt: c.token}
	w.runOp(c, r, kind, meta, ev)
}

// opRun is one event being applied for a server call, one store call at a
// time: each call takes effect when it is made, and its answer arrives after
// the store's latency, with the world going on in between. On the
// compare-and-set path the calls are a store.Op's (load, then a write); on
// the fast path there is one, Apply.
type opRun struct {
	// op (the compare-and-set path) or applied (the fast path's result) is
	// taken from the world's pool while an event is under way, and given
	// back once its caller heard the outcome (opAnswer): a kilobyte a
	// server call would otherwise allocate and clear.
	op      *store.Op
	applied *store.Applied
	held    *core.Record // the record the attempt's reserve left (Effect.Held), for its outcome
	err     error        // the fast path's error
	done    bool         // the fast path's one call was made
	ev      core.Event
	meta    opMeta
	st      store.Store // the store as this caller sees it (meta names it)
	view    callerApplier
	fast    bool // st is an Applier: one call, Apply
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
		c.s.w.opAnswer(c, &c.main, evOpStep)
	case evHbStep:
		c.s.w.opAnswer(c, c.hb, evHbStep)
	case evHbTick:
		c.beat()
	case evOpResume:
		c.s.w.opCall(c, &c.main, evOpStep)
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

// runOp starts applying ev for c in r; done gets the outcome.
func (w *world) runOp(c *serverCall, r *opRun, kind uint8, meta opMeta, ev core.Event) {
	if r.st == nil {
		// The view lives in r: a server call's store view allocates nothing.
		r.view = callerApplier{callerStore{w.store, &r.meta}}
		var st store.Store = &r.view.callerStore
		if w.fastPath {
			st = &r.view
		}
		r.st = w.storeView(st)
		_, r.fast = r.st.(store.Applier)
	}
	if r.fast {
		if r.applied == nil {
			r.applied = w.pools.applied()
		}
		r.ev, r.done, r.err = ev, false, nil
	} else {
		if r.op == nil {
			r.op = w.pools.op()
		}
		r.op.Reset(w.scopes[meta.scope], ev, &w.policy)
		r.op.UseStep(w.step)
	}
	r.meta = meta
	w.opCall(c, r, kind)
}

// opCall makes r's pending store call now; its answer comes as kind.
func (w *world) opCall(c *serverCall, r *opRun, kind uint8) {
	lat := w.storeLatency()
	r.meta.returnAt = w.now + lat
	if r.fast {
		if r.held != nil {
			r.err = store.ApplyHeld(context.Background(), r.st, r.held, r.ev, &w.policy, r.applied)
		} else {
			r.err = store.Apply(context.Background(), r.st, w.scopes[r.meta.scope], r.ev, &w.policy, r.applied)
		}
		r.done = true
	} else {
		r.op.Do(context.Background(), r.st)
	}
	w.afterOnH(c.s, c.epoch, lat, c, kind)
}

// result is r's outcome once it is over (ok false: a store call is still to make).
func (r *opRun) result() (a *store.Applied, err error, ok bool) {
	if r.fast {
		return r.applied, r.err, r.done
	}
	a, err = r.op.Applied()
	return a, err, r.op.Done()
}

func (w *world) opAnswer(c *serverCall, r *opRun, kind uint8) {
	a, err, ok := r.result()
	if !ok {
		if r == &c.main && ownerWrite(r.meta.event) && w.fault(FaultPause, w.rng.servers) {
			// The server freezes with the record it loaded in hand, and
			// writes when it wakes: a zombie whose compare-and-set must
			// fail, even if meanwhile the key's record expired, was
			// removed and a new one reached the version it expects.
			c.s.pauseLong(c.scope)
			c.s.runEvent(event{h: c, kind: evOpResume, srv: c.s, epoch: c.epoch})
			return
		}
		w.opCall(c, r, kind)
		return
	}
	m := &r.meta
	if kind == evTxStep {
		c.txDone(a, err) // not the Flow's: nothing for it to hear, count or recount
		w.pools.release(r)
		return
	}
	if err != nil {
		w.log(TraceEvent{Scope: m.scope, Actor: ActorServer, ActorID: c.s.id, What: WhatStoreError, Arg: int64(m.event)})
	} else {
		w.log(TraceEvent{Scope: m.scope, Actor: ActorServer, ActorID: c.s.id, What: WhatDecision, Token: a.Transition.Decision.Token, Arg: int64(a.Transition.Decision.Kind), Arg2: int64(m.event)})
	}
	switch {
	case kind == evHbStep:
		w.heard(m, a, err) // check_live.go: what the Lease is told, checked and recounted
		c.beaten(a, err)
		w.pools.release(r)
	case err != nil && !c.detached && c.att.gone:
		w.pools.release(r)
		c.call.Gone(context.Canceled) // as Do: the call failed and the client had hung up
		c.advance()
	default:
		w.heard(m, a, err)                              // what the Flow is told, checked and recounted
		w.check.flowHeard(c, m.event, c.sentAt, a, err) // check_flow.go
		c.call.Applied(a, err)
		w.pools.release(r) // the Flow read *a during Applied only
		c.advance()
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
	if w.fault(FaultPause, w.rng.servers) {
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
		if c.pauseAfter {
			s.pause(c.scope) // a zombie: it wakes after its lease and tries to complete
		}
		s.runEvent(event{h: c, kind: evActionDone, srv: s, epoch: c.epoch})
	case evActionDone:
		if c.gwResult.charge == nil {
			c.finishAction(core.Response{}, c.notExecuted(errDeadlinePassed), actionNotExecuted)
			return
		}
		c.buf = copyResponse(c.gwResult.charge.response())
		if len(c.buf.Headers) > 0 && w.fault(FaultCompleteInDiffers, w.rng.servers) {
			// The handler writes its business row and the completion in one
			// transaction (Attempt.CompleteIn), then returns the response.
			if c.tx == nil {
				c.tx = new(opRun)
			}
			c.run(c.tx, evTxStep, core.Event{Kind: core.EventComplete, Token: c.attempt.Token, Response: copyResponse(c.buf)})
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
	c.watch.code = code
	return &idem.NotExecutedError{Err: err, Code: idem.ErrorCode(code)}
}

const (
	actionCompleted int64 = iota
	actionNotExecuted
	actionUnknown
	actionPanicked
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
	var e *idem.Error
	if errors.As(err, &e) {
		return answer{status: e.Status, definitive: e.Code == idem.CodeKeyMisuse, retryAfter: int64(e.RetryAfter)}
	}
	return answer{status: http.StatusInternalServerError}
}

func (c *serverCall) reply() {
	c.s.w.check.life.recorded(c.scope, &c.main.meta, c.call)
	res, err := c.call.Result()
	c.s.w.check.inFlightAnswer(c.scope, err) // check_live.go
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
	c.s.w.pools.putFlow(c.call)
	c.call = nil
}

// sendAnswer sends a to the client of att, through the lossy network.
func (w *world) sendAnswer(s *server, att *attempt, a answer) {
	scope := att.req.scope
	a.response = copyResponse(a.response) // what crosses the network: the client's own bytes
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
	w.after(w.netLatency(), func() { att.req.c.receive(att, a) })
}

func timeSince(now, start int64) time.Duration { return time.Duration(now - start) }
