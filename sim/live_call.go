package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// liveScheduleRate is how often each of a Do's schedules (below) is drawn
// for a call in the fault phase, when its fault is on, besides the seed's
// own rate for the fault: a swarm's draw leaves half the faults off and the
// others rare, and a live run is short, so that without a floor most runs
// would never give Do's heartbeat, its detached outcome or its fail-closed
// reserve a schedule that tests them.
const liveScheduleRate = 0.04

// schedule reports whether fault f's Do schedule is drawn now, from r.
func (l *live) schedule(f Fault, r *rand.Rand) bool {
	w := l.w
	if w.fault(f, r) {
		return true
	}
	return w.cfg.Faults.Has(f) && !w.healed && r.Float64() < l.scheduleRate
}

// liveSchedules counts how often each Do schedule played out in a run: the
// tests hold the world to producing them.
type liveSchedules struct {
	extendedPastFirst int // actions that ran past their first lease end on an extended lease
	beatsFailed       int // heartbeats the store failed in an outage the extended lease covered
	leaseLostTold     int // actions cancelled for a lost lease: a heartbeat found the record taken over, or the lease ended
	outcomeAfterLeft  int // outcomes written after the client went away
	reserveFailed     int // reserves the store failed while the client waited
	inFlight          int // in-flight answers to a client that waited
}

// liveCall is one Do: its own executor over its own view of the store, so
// that every store call of the Do and of its heartbeat is known to be its
// own, and the schedules drawn for it, which the world plays out.
type liveCall struct {
	l    *live
	req  *request
	meta opMeta // the store's view of the caller: the event it applies, its attempt
	ex   *idem.Executor
	// ctx is the client's request, cancel its end: the client hangs up.
	ctx    context.Context
	cancel context.CancelFunc

	// The schedules (fault injectors), drawn when the call is made.
	timeout time.Duration // how long the client waits for its answer
	// hangUp: the client hangs up once the action has started (its
	// request's context is cancelled mid-action).
	hangUp bool
	// detached: the action finishes its downstream call when its caller went
	// away (a handler that completes a charge regardless); never when its
	// lease is lost.
	detached bool
	// work is how long the action keeps working after the gateway answered
	// (a long action that lives on its heartbeats: past its first lease).
	work time.Duration
	// beatEvery is Do's heartbeat interval: a third of the lease, or past
	// the lease when the host's heartbeat stalls (a process starved or
	// paused) while its downstream call is in flight.
	beatEvery time.Duration
	// beatOutage: the store fails every heartbeat from the attempt's first
	// lease end until shortly before the lease end the attempt last heard,
	// a stretch the extended lease covers.
	beatOutage bool
	// reserveDownAt: the store fails this call's reserve number n (1: the
	// first; 2: the one after an in-flight wait, when there is one), while
	// the caller is there; 0: none. reserves counts them.
	reserveDownAt, reserves int

	// What the attempt heard, under l.mu; the injectors and the checkers
	// read it.
	token    core.Token
	acting   bool      // the action is running: the Do's store calls are its heartbeat's
	acted    bool      // the action returned: what the Do applies now is its outcome
	firstEnd time.Time // the lease end its reserve granted
	leaseEnd time.Time // the latest lease end it heard (its reserve's, then each Extended heartbeat's)
	// reckoned is how much earlier than leaseEnd the executor may reckon
	// that lease to end: it counts a lease from when the call that granted
	// it was sent, not from the store's time the call applied at.
	reckoned time.Duration
	// The lease before the last extension, as Do reckoned it, and when
	// that extension was heard: Do may act on the older lease for as long
	// as it takes the answer to reach it (see leaseCancelled).
	prevReckoned, extendedAt time.Time
	lostAt                   time.Time // when a heartbeat answered that the record is no longer its own (zero: none did)
}

// newCall draws a Do of req, under the lock.
func (l *live) newCall(req *request) *liveCall {
	w := l.w
	lease := w.policy.LeaseDuration
	c := &liveCall{l: l, req: req, timeout: w.cfg.ClientTimeout, beatEvery: lease / 3}
	c.meta = opMeta{actor: ActorServer, scope: req.scope}
	within := func(r *rand.Rand, lo, hi time.Duration) time.Duration { return time.Duration(between(r, lo, hi)) }
	c.hangUp = l.schedule(FaultDisconnect, w.rng.net)
	c.detached = w.rng.net.IntN(2) == 0
	if l.schedule(FaultGatewaySlow, w.rng.gateway) {
		c.work = within(w.rng.gateway, lease+lease/2, 2*lease+lease/2)
		c.beatOutage = w.cfg.Faults.Has(FaultStoreErrorBefore) && w.rng.store.IntN(2) == 0
	}
	if l.schedule(FaultHeartbeatStall, w.rng.servers) {
		// Its first beat comes after the sweeper took the lease over; the
		// action is still at work then, for a lease or two.
		c.beatEvery = within(w.rng.servers, lease+lease/2, 2*lease+lease/2)
		c.work = max(c.work, c.beatEvery+within(w.rng.servers, lease, 2*lease))
	}
	if l.schedule(FaultStoreErrorBefore, w.rng.store) {
		c.reserveDownAt = 1 + w.rng.store.IntN(2)
	}
	if c.work > 0 {
		c.timeout = max(c.timeout, c.work+2*lease+w.cfg.GatewayTimeout) // a client patient enough for a long action
	}
	ex, err := idem.New(l.view(&c.meta, c), idem.WithPolicy(w.policy), idem.WithMetrics(l.metrics), idem.WithHeartbeatInterval(c.beatEvery))
	if err != nil {
		panic(err) // unreachable: the policy was validated, the interval is positive
	}
	c.ex = ex
	return c
}

// hasActed reports whether the call's action has ended, under the lock
// (its heartbeat's store calls ask while the action may be ending).
func (c *liveCall) hasActed() bool {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return c.acted
}

// injectDo is the Do schedules' store faults, before ev applies: true
// fails the call (nothing applied). The store's view learns the event from
// liveView.Apply, under the lock of each store call it makes.
func (c *liveCall) injectDo(ev core.Event) bool {
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev.Kind {
	case core.EventReserve:
		if c.reserves++; c.reserves == c.reserveDownAt {
			if c.ctx.Err() == nil {
				l.played.reserveFailed++
			}
			return true
		}
	case core.EventHeartbeat:
		now := l.now()
		if c.beatOutage && c.acting && !now.Before(c.firstEnd) && now.Before(c.leaseEnd.Add(-c.beatEvery/2)) {
			l.played.beatsFailed++
			return true
		}
	}
	return false
}

// do is the call's Do; ok is false when the answer was lost.
func (c *liveCall) do(lost bool) (answer, bool) {
	l := c.l
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	c.ctx, c.cancel = ctx, cancel
	req := c.req
	res, err := c.ex.Do(ctx, idem.Request{Scope: req.key, Fingerprint: req.fp}, c.action)
	callerGone := ctx.Err() != nil
	w := l.lock()
	defer l.unlock()
	res, err = l.plantResult(res, err)
	if !l.checkResult(c, res, err, callerGone) {
		return answer{}, false // no answer: the client tries again
	}
	a := toAnswer(res, err)
	if l.plant.corruptReplays && a.kind == idem.ResultReplayed && len(a.response.Body) > 0 {
		a.response = a.response.Clone()
		a.response.Body[0] ^= 1
	}
	if lost {
		return answer{}, false
	}
	w.report.reply(a)
	w.check.answer(req, &a)
	if a.definitive && !req.done {
		req.done, req.doneAt = true, w.now
		w.report.Done++
	}
	return a, true
}

// actionRun is one run of the action: how its context ended, if it did.
type actionRun struct {
	c          *liveCall
	ctx        context.Context
	done       <-chan struct{} // ctx.Done(), nil once a detached action goes on without its caller
	leaseLost  bool            // cancelled for a lost lease
	callerGone bool            // the caller went away (and a detached action went on)
}

// stop hears the action's context end, and says whether the action stops,
// with its error.
func (a *actionRun) stop() (bool, error) {
	cause := context.Cause(a.ctx)
	if errors.Is(cause, idem.ErrLeaseLost) {
		a.leaseLost = true
		a.c.l.leaseCancelled(a.c)
		return true, cause
	}
	a.callerGone = true
	if a.c.detached {
		a.done = nil // it finishes its downstream call without its caller
		return false, nil
	}
	return true, cause
}

// action charges req at the gateway: it may be refused, lost before or
// after the charge, slow, or outlive its lease; the request keeps going
// after the action gave up on it, and the gateway refuses it past the
// attempt's deadline (its lease end when it started). A long action then
// keeps working, on its heartbeats.
func (c *liveCall) action(ctx context.Context, at idem.Attempt) (idem.Response, error) {
	l := c.l
	w := l.lock()
	c.token, c.acting, c.firstEnd, c.leaseEnd = at.Token, true, at.LockedUntil, at.LockedUntil
	c.meta.attempt = at.Token
	req := c.req
	w.check.gatewayCall(req.scope, at.Token)
	refused := l.schedule(FaultGatewayRefuse, w.rng.gateway)
	lostBefore := w.fault(FaultGatewayTimeoutBefore, w.rng.gateway)
	lostAfter := w.fault(FaultGatewayTimeoutAfter, w.rng.gateway)
	transit := time.Duration(w.netLatency() + w.gatewayLatency())
	if w.fault(FaultGatewayStall, w.rng.gateway) || w.fault(FaultPause, w.rng.servers) {
		transit += w.policy.LeaseDuration + time.Duration(w.rng.gateway.Int64N(int64(w.policy.LeaseDuration)))
	}
	timeout := w.cfg.GatewayTimeout
	l.unlock()
	if l.plant.leaseLossUntold {
		ctx = c.ctx
	}
	a := &actionRun{c: c, ctx: ctx, done: ctx.Done()}
	resp, err := c.charge(a, at, refused, lostBefore, lostAfter, transit, timeout)
	if err == nil && c.work > 0 {
		err = a.sleep(c.work)
	}
	l.actionEnded(a)
	if err != nil {
		return idem.Response{}, err
	}
	return resp, nil
}

// charge is the gateway call.
func (c *liveCall) charge(a *actionRun, at idem.Attempt, refused, lostBefore, lostAfter bool, transit, timeout time.Duration) (core.Response, error) {
	if refused {
		return core.Response{}, idem.NotExecuted(errGatewayRefused)
	}
	l, req := c.l, c.req
	answered := make(chan core.Response, 1)
	if !lostBefore {
		go func() {
			time.Sleep(transit)
			w := l.lock()
			res := w.gateway.handle(w, req.scope, req, at.Token, at.LockedUntil)
			var resp core.Response // zero: refused, the deadline passed
			if res.charge != nil {
				resp = res.charge.response()
			}
			l.unlock()
			if res.charge == nil || !lostAfter {
				answered <- resp
			}
		}()
	}
	if c.hangUp {
		c.cancel() // the client hangs up, its request on its way
	}
	gaveUp := time.After(max(timeout, transit/2))
	for {
		select {
		case resp := <-answered:
			if resp.StatusCode == 0 {
				return core.Response{}, idem.NotExecuted(errDeadlinePassed)
			}
			return resp, nil
		case <-gaveUp:
			return core.Response{}, errGatewayTimeout
		case <-a.done:
			if stop, err := a.stop(); stop {
				return core.Response{}, err // the client went away, or the lease was lost
			}
		}
	}
}

// sleep is d of the action's work; an error if it stopped.
func (a *actionRun) sleep(d time.Duration) error {
	over := time.After(d)
	for {
		select {
		case <-over:
			return nil
		case <-a.done:
			if stop, err := a.stop(); stop {
				return err
			}
		}
	}
}

// plantResult is what Do returned, with the planted bugs of its answer.
func (l *live) plantResult(res idem.Result, err error) (idem.Result, error) {
	var e *idem.Error
	switch {
	case !errors.As(err, &e):
	case l.plant.emptySuccess && e.Code == idem.CodeStoreUnavailable:
		return idem.Result{}, nil
	case l.plant.swapInFlight && e.Code == idem.CodeInProgress:
		swapped := *e
		swapped.Status = http.StatusConflict + http.StatusAccepted - e.Status
		return res, &swapped
	}
	return res, err
}
