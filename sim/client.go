package sim

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/idemkit/idem/core"
)

// client sends payment requests, times out, retries with backoff and
// jitter, and sometimes misbehaves as SPEC §8 says.
type client struct {
	w         *world
	id        int32
	principal string
	buggy     bool         // one of the clients that reuse keys (FaultKeyMisuse)
	keys      []core.Scope // keys it used, for a buggy reuse
}

// buggyShare is the share of clients that reuse a key for another payload.
const buggyShare = 0.25

// request is one logical payment: the same key and payload on every retry.
type request struct {
	id        int
	c         *client
	key       core.Scope
	scope     int32
	payload   int64 // the payload's identity, carried back in responses
	amount    int64
	fp        core.Fingerprint
	start     int64
	attempts  int
	done      bool
	doneAt    int64
	backoffOn int // consecutive failures, for the backoff
}

// attempt is one send of a request (duplicates share it).
type attempt struct {
	req     *request
	n       int
	handled bool     // answered or timed out: its retry is decided
	to      [2]int32 // the servers it was sent to
}

// Kinds of attempt and request events.
const (
	evArrive0 uint8 = iota // the attempt reaches server to[0]
	evArrive1              // its duplicate reaches server to[1]
	evServe0               // server to[0] takes it up
	evServe1               // server to[1] takes it up
	evRefused              // the client hears the server is down
	evTimeout              // the client stops waiting for it
	evRetry                // (request) time to send again
	evArrival              // (client) time to start its next request
)

func (att *attempt) handle(kind uint8) {
	w := att.req.c.w
	switch kind {
	case evArrive0, evArrive1:
		w.servers[att.to[kind-evArrive0]].receive(att, kind-evArrive0)
	case evServe0, evServe1:
		w.servers[att.to[kind-evServe0]].serve(att)
	case evRefused:
		att.req.c.refused(att)
	case evTimeout:
		att.req.c.timeout(att)
	}
}

func (c *client) handle(kind uint8) {
	if kind == evArrival {
		c.newRequest()
	}
}

func (req *request) handle(kind uint8) {
	if kind == evRetry && !req.done {
		req.c.send(req)
	}
}

func (c *client) newRequest() { c.send(c.makeRequest()) }

// makeRequest draws the client's next payment.
func (c *client) makeRequest() *request {
	w := c.w
	req := &request{id: len(w.requests), c: c, start: w.now}
	req.payload = int64(req.id + 1)
	req.amount = 100 + w.rng.clients.Int64N(100000)
	if c.buggy && len(c.keys) > 0 && w.fault(FaultKeyMisuse, w.rng.clients) {
		req.key = c.keys[w.rng.clients.IntN(len(c.keys))]
	} else {
		req.key = core.Scope{Tenant: "acme", Principal: c.principal, UseCase: "payments.create", Key: uuid(w.rng.clients.Uint64(), w.rng.clients.Uint64())}
		c.keys = append(c.keys, req.key)
	}
	req.scope = w.scopeOf(req.key)
	req.fp = payloadFingerprint(req.amount, req.payload)
	w.requests = append(w.requests, req)
	return req
}

// payloadFingerprint stands for the fingerprint package's work on the body
// {"amount":...,"payload":...}: distinct payloads, distinct fingerprints.
func payloadFingerprint(amount, payload int64) core.Fingerprint {
	var b [24]byte
	copy(b[:8], "payment:")
	binary.BigEndian.PutUint64(b[8:], uint64(amount))
	binary.BigEndian.PutUint64(b[16:], uint64(payload))
	return sha256.Sum256(b[:])
}

// uuid formats 128 random bits as a version 4 UUID.
func uuid(a, b uint64) string {
	const digits = "0123456789abcdef"
	var u [36]byte
	a = a&^(0xf<<12) | 4<<12   // version 4
	b = b&^(0x3<<62) | 0x2<<62 // variant 10
	bits := [32]byte{}
	for i := range 16 {
		bits[i] = digits[a>>(60-4*i)&0xf]
		bits[16+i] = digits[b>>(60-4*i)&0xf]
	}
	j := 0
	for i := range u {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			u[i] = '-'
			continue
		}
		u[i] = bits[j]
		j++
	}
	return string(u[:])
}

func (c *client) send(req *request) {
	w := c.w
	req.attempts++
	att := &attempt{req: req, n: req.attempts}
	first := w.rng.clients.IntN(len(w.servers))
	c.deliver(att, first, evArrive0)
	if len(w.servers) > 1 && w.fault(FaultDuplicate, w.rng.clients) {
		c.deliver(att, (first+1+w.rng.clients.IntN(len(w.servers)-1))%len(w.servers), evArrive1)
	}
	w.afterH(int64(w.cfg.ClientTimeout), att, evTimeout)
}

func (c *client) timeout(att *attempt) {
	req := att.req
	if att.handled || req.done {
		return
	}
	att.handled = true
	c.w.log(TraceEvent{Scope: req.scope, Actor: ActorClient, ActorID: c.id, What: WhatTimeout, Arg: int64(att.n)})
	c.retry(req, 0)
}

func (c *client) deliver(att *attempt, server int, kind uint8) {
	w := c.w
	w.log(TraceEvent{Scope: att.req.scope, Actor: ActorClient, ActorID: c.id, What: WhatSend, Arg: int64(att.n), Arg2: int64(server)})
	if w.fault(FaultLostRequest, w.rng.net) {
		w.log(TraceEvent{Scope: att.req.scope, Actor: ActorClient, ActorID: c.id, What: WhatLost, Arg: 0})
		return
	}
	att.to[kind-evArrive0] = int32(server)
	w.afterH(w.netLatency(), att, kind)
}

// retry sends req again after at least wait, with exponential backoff and
// full jitter on top.
func (c *client) retry(req *request, wait int64) {
	w := c.w
	if w.plant.clientsGiveUp {
		return
	}
	req.backoffOn++
	backoff := int64(w.cfg.ClientBackoffBase) << min(req.backoffOn, 20)
	backoff = min(backoff, int64(w.cfg.ClientBackoffCap))
	w.afterH(wait+w.rng.clients.Int64N(backoff+1), req, evRetry)
}

func (c *client) refused(att *attempt) {
	w := c.w
	w.log(TraceEvent{Scope: att.req.scope, Actor: ActorClient, ActorID: c.id, What: WhatRefused})
	if att.handled || att.req.done {
		return
	}
	att.handled = true
	c.retry(att.req, 0)
}

func (c *client) receive(att *attempt, a answer) {
	w := c.w
	req := att.req
	w.log(TraceEvent{Scope: req.scope, Actor: ActorClient, ActorID: c.id, What: WhatAnswer, Arg: int64(a.status)})
	w.check.answer(req, &a)
	if req.done {
		return
	}
	if a.definitive {
		req.done, req.doneAt = true, w.now
		w.report.Done++
		w.log(TraceEvent{Scope: req.scope, Actor: ActorClient, ActorID: c.id, What: WhatDone, Arg: int64(a.status)})
		return
	}
	if att.handled {
		return // this attempt already timed out and a retry is on its way
	}
	att.handled = true
	c.retry(req, a.retryAfter)
}
