package sim

import (
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
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
	backlog     int   // the arrivals held during the pause (Config.BacklogMax)
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
	s.freeze(scope, lease+lease/2+s.w.rng.servers.Int64N(lease*3/2))
}

// freeze pauses the server for d from now, with an empty backlog.
func (s *server) freeze(scope int32, d int64) {
	s.pausedFrom, s.pausedUntil, s.backlog = s.w.now, s.w.now+d, 0
	s.w.log(TraceEvent{Scope: scope, Actor: ActorServer, ActorID: s.id, What: WhatPause, Arg: d})
}

// mayPause reports whether s may freeze now: not when every other server
// is frozen (a run of one server excepted: it has no other). Like a crash
// in a crash's quiet time, a pause that would leave no server running
// tests little: clients time out on every server, and the attempts that
// piled up are served in a burst that makes hundreds of records unknown at
// once, whose reconciliation then takes most of the run's time (a seed's
// cost several times the median) while it adds nothing that frozen servers
// beside a running one do not.
func (s *server) mayPause() bool {
	if len(s.w.servers) == 1 {
		return true
	}
	for _, o := range s.w.servers {
		if o != s && s.w.now >= o.pausedUntil {
			return true
		}
	}
	return false
}

// hold reports whether the server takes an arrival now: always while it
// runs; while it is paused, only until Config.BacklogMax arrivals wait.
// Without a bound a long pause gathered hundreds of attempts whose clients
// had given up, all served in one burst when it ended: a fifth of a run's
// answers went to them, and the first few dozen of a pause already bring
// every late arrival the burst did (a replay, a new incarnation, an
// attempt past its key's lease).
func (s *server) hold() bool {
	most := s.w.cfg.BacklogMax
	if s.w.now >= s.pausedUntil || most == 0 {
		return true
	}
	if s.backlog >= most {
		return false
	}
	s.backlog++
	return true
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
	s.freeze(scope, int64(life)+s.w.rng.servers.Int64N(int64(2*time.Second)))
}

// ownerWrite reports whether k is an event an attempt's owner writes with
// its token.
func ownerWrite(k core.EventKind) bool {
	return k == core.EventComplete || k == core.EventFail || k == core.EventMarkUnknown
}

// receive is a request (copy 0 or 1 of att) arriving from a
// client: served now, or once the server's pause ends, or refused when the
// server is down or its backlog full.
func (s *server) receive(att *attempt, copy uint8) {
	if !s.alive || !s.hold() {
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
	fp, again, err := att.fingerprint(w.payloads.specs[useCase][att.req.version])
	if err != nil {
		w.check.fingerprintRefused(att, err)
		return
	}
	if !again {
		// The same fingerprint of the same request passes again: the
		// checker's map of owners only grows.
		w.check.fingerprint(att.req, fp)
	}
	if w.cfg.Baseline == BaselineNoFingerprint {
		fp = w.requestFingerprint(att.req)
	}
	key := att.req.key
	if att.req.badKey != "" {
		key.Key = att.req.badKey
	}
	c := w.slabs.calls.new()
	*c = serverCall{s: s, epoch: s.epoch, att: att, scope: att.req.scope, call: w.pools.flow(), watch: w.pools.watches.take()}
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
		c.end()
		a := toAnswer(idem.Result{}, err)
		a.definitive, a.refused = true, true
		w.sendAnswer(s, att, a)
		return
	}
	att.calls = append(att.calls, c)
	c.advance()
}
