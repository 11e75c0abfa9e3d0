package sim

import (
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/fingerprint"
)

// client sends payment requests, times out, retries with backoff and
// jitter, and sometimes misbehaves as SPEC §8 says.
type client struct {
	w         *world
	id        int32
	principal string
	buggy     bool         // one of the clients that reuse keys (FaultKeyMisuse)
	keys      []core.Scope // keys it used, for a buggy reuse
	version   uint8        // the index of the fingerprint schema version its SDK sends
}

// buggyShare is the share of clients that reuse a key for another payload.
const buggyShare = 0.25

// request is one logical payment: the same key and payload on every retry.
type request struct {
	id      int
	c       *client
	key     core.Scope
	scope   int32
	payload int64 // the payload's identity, carried back in responses
	amount  int64
	body    jsonValue        // the payload, written out anew for every send
	useCase uint8            // indexes of its use case and schema version
	version uint8            // (useCases, schemaVersions)
	fp      core.Fingerprint // the payload's fingerprint by the reference (refFingerprint)
	long    bool             // a long action: the gateway takes leases over it (longActionShares)
	// badKey, if set, is the key as the client writes it in its header
	// (FaultBadInput): with a space at an end, or spaces only.
	badKey string
	sent   []byte // the payload as the last send wrote it
	// sentFP and sentErr are sent's fingerprint by sentSpec, once a server
	// took it: a duplicate send, and a retry that sends the same bytes,
	// carry them again, and the fingerprint is a function of the bytes
	// (package fingerprint is pure), so it is taken once a rendering.
	sentFP    core.Fingerprint
	sentErr   error
	sentSpec  *fingerprint.Spec
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
	body    []byte   // the payload as this send wrote it
	handled bool     // answered or timed out: its retry is decided
	to      [2]int32 // the servers it was sent to
	// gone: the client hung up on it (FaultDisconnect), and calls are
	// the server calls it started, which hear so.
	gone     bool
	calls    []*serverCall
	callsBuf [2]*serverCall // calls' first array: an attempt reaches at most two servers
}

// Kinds of attempt and request events.
const (
	evArrive0 uint8 = iota // the attempt reaches server to[0]
	evArrive1              // its duplicate reaches server to[1]
	evServe0               // server to[0] takes it up
	evServe1               // server to[1] takes it up
	evRefused              // the client hears the server is down
	evTimeout              // the client stops waiting for it
	evHangUp               // the client hangs up on it (FaultDisconnect)
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
	case evHangUp:
		att.req.c.hangUp(att)
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

// makeRequest draws the client's next payment. A buggy client's reused key
// carries a payload that is another request (another reference
// fingerprint) than every earlier one on the key.
func (c *client) makeRequest() *request {
	w := c.w
	req := w.slabs.requests.new()
	*req = request{id: len(w.requests), c: c, start: w.now, version: c.version}
	req.payload = int64(req.id + 1)
	req.body = w.payloads.draw(w.rng.payload)
	req.long = w.rng.payload.Float64() < w.payloads.longShare
	if c.buggy && len(c.keys) > 0 && w.fault(FaultKeyMisuse, w.rng.clients) {
		req.key = c.misusedKey()
		req.useCase = useCaseIndex(req.key.UseCase)
		req.scope = w.scopeOf(req.key)
		for tries := 0; w.payloadOnScope(req); tries++ {
			if tries == 8 {
				req.body.members[0].value = jsonInt(int64(1000000 + req.id)) // an amount no other request has
				break
			}
			req.body = w.payloads.draw(w.rng.payload)
		}
	} else {
		req.useCase = uint8(w.rng.payload.IntN(len(useCases)))
		req.key = core.Scope{Tenant: "acme", Principal: c.principal, UseCase: useCases[req.useCase], Key: uuid(w.rng.payload.Uint64(), w.rng.payload.Uint64())}
		c.keys = append(c.keys, req.key)
		req.scope = w.scopeOf(req.key)
	}
	req.amount = req.body.members[0].value.num
	req.fp = w.payloads.refFingerprint(&req.body, useCases[req.useCase], schemaVersions[req.version])
	w.requests = append(w.requests, req)
	w.check.request(req)
	w.operatorChance()
	return req
}

// misusedKey is the key a buggy client reuses: one of its keys at random,
// or three times in four one whose record is failed_retryable now, if it
// has one. That record waits for its own request's retry, and only for a
// backoff: a key drawn at random meets it so seldom that a core which runs
// another payload under it (instead of answering Mismatch) went unseen in
// all but one or two seeds of 500.
func (c *client) misusedKey() core.Scope {
	w := c.w
	if w.rng.clients.IntN(4) != 0 {
		var failed []core.Scope
		for _, k := range c.keys {
			if i, ok := w.scopeIndex(k); ok && w.shadow[i].Status == core.StatusFailedRetryable {
				failed = append(failed, k)
			}
		}
		if len(failed) > 0 {
			return failed[w.rng.clients.IntN(len(failed))]
		}
	}
	return c.keys[w.rng.clients.IntN(len(c.keys))]
}

// payloadOnScope reports whether an earlier request on req's key is the
// same request as req (the same reference fingerprint).
func (w *world) payloadOnScope(req *request) bool {
	fp := w.payloads.refFingerprint(&req.body, useCases[req.useCase], schemaVersions[req.version])
	for _, r := range w.requests {
		if r.scope == req.scope && r.fp == fp {
			return true
		}
	}
	return false
}

func useCaseIndex(uc string) uint8 {
	for i, u := range useCases {
		if u == uc {
			return uint8(i)
		}
	}
	return 0
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
	att := w.slabs.attempts.new()
	*att = attempt{req: req, n: req.attempts}
	att.calls = att.callsBuf[:0]
	if req.attempts == 1 && w.fault(FaultBadInput, w.rng.clients) {
		req.badKey = badKey(req.key.Key, w.rng.clients.IntN(badKeyKinds))
	}
	if req.sent == nil || w.rng.render.IntN(4) == 0 {
		// A client writes its payload anew (members in another order, other
		// white space, a new timestamp), or, three times in four on a
		// retry, sends the bytes it sent before, as most clients do. (Half
		// the time cost a few per cent of a run in rendering and
		// fingerprints, and changed no decision: the bytes differ, the
		// fingerprint does not.)
		w.rendered = render(w.rendered[:0], &req.body, w.now, w.rng.render)
		req.sent = w.slabs.bytesOf(w.rendered) // the request's own bytes, as long as the world
		req.sentSpec = nil
	}
	att.body = req.sent
	first := w.rng.clients.IntN(len(w.servers))
	c.deliver(att, first, evArrive0)
	if len(w.servers) > 1 && w.fault(FaultDuplicate, w.rng.clients) {
		c.deliver(att, (first+1+w.rng.clients.IntN(len(w.servers)-1))%len(w.servers), evArrive1)
	}
	w.afterH(int64(w.cfg.ClientTimeout), att, evTimeout)
	if w.fault(FaultDisconnect, w.rng.net) {
		w.afterH(w.rng.net.Int64N(int64(w.cfg.ClientTimeout)), att, evHangUp)
	}
}

// hangUp is the client closing the connection of att before its answer
// came, at any step of its requests on the servers: they hear that their
// context is done, and the client retries as after a timeout.
func (c *client) hangUp(att *attempt) {
	if att.handled || att.req.done {
		return
	}
	att.gone = true
	c.w.log(TraceEvent{Scope: att.req.scope, Actor: ActorClient, ActorID: c.id, What: WhatHangUp, Arg: int64(att.n)})
	for _, call := range att.calls {
		call.hangUp()
	}
	c.timeout(att)
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
	backoff = min(backoff, int64(w.cfg.ClientBackoffMax))
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

// fingerprint is the fingerprint of att's body by spec, taken once a
// rendering of its request; again reports that it was taken before (and
// the checker has seen it for this request).
func (att *attempt) fingerprint(spec *fingerprint.Spec) (fp core.Fingerprint, again bool, err error) {
	r := att.req
	if len(att.body) == 0 || len(r.sent) == 0 || &att.body[0] != &r.sent[0] {
		fp, err = spec.Of(att.body) // an earlier rendering
		return fp, false, err
	}
	if r.sentSpec != spec {
		r.sentFP, r.sentErr = spec.Of(att.body)
		r.sentSpec = spec
		return r.sentFP, false, r.sentErr
	}
	return r.sentFP, true, r.sentErr
}
