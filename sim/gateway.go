package sim

import (
	"net/http"
	"strconv"
	"time"

	"github.com/idemkit/idem/core"
)

// gateway is the downstream payment provider. Its ledger is the ground
// truth of what was charged. It refuses a request that arrives after the
// deadline its caller gave (the attempt's lease end), and with
// GatewayIdempotent it dedupes charges by key itself.
type gateway struct {
	// ledger: by scope, the request each attempt made, in the order they
	// came (a scope sees a few: a short slice is searched faster than a
	// map keyed by (scope, token) is hashed).
	ledger [][]ledgerEntry
	byKey  []*charge // by scope: the latest charge
	next   int
}

// ledgerEntry is the request attempt token made.
type ledgerEntry struct {
	token  core.Token
	charge *charge
}

// attemptID names an attempt: the scope's index and the attempt's token.
type attemptID struct {
	scope int32
	token core.Token
}

// charge is one entry of the ledger: a request the gateway processed, with
// what it answered.
type charge struct {
	id      int
	scope   int32
	amount  int64
	payload int64
	kind    chargeKind
	resp    core.Response // built once: its slices are never modified
}

// chargeKind is what the gateway did with a request it processed. Every
// kind is a business outcome, stored and replayed, never run again.
type chargeKind uint8

const (
	chargeMade     chargeKind = iota // charged: 201 with the payment
	chargeDeclined                   // the card was declined: 402
	chargeFailed                     // the processor failed: a 502 business answer
	chargeEmpty                      // charged, answered 201 with an empty body
	chargeLarge                      // charged, answered 201 with a large body
	chargeKindCount
)

var chargeKindNames = [chargeKindCount]string{"charge", "decline", "processor_error", "charge_empty_body", "charge_large_body"}

func (k chargeKind) String() string { return chargeKindNames[k] }

type gatewayResult struct {
	charge *charge // nil: refused, nothing happened
}

func (g *gateway) init(requests int) {
	g.ledger = truncated(g.ledger, requests, func(l *[]ledgerEntry) { *l = emptied(*l) })
	g.byKey = sized(g.byKey, requests)
}

// find is the reconciler's query: what did the attempt do?
func (g *gateway) find(id attemptID) *charge {
	if id.scope < 0 || int(id.scope) >= len(g.ledger) {
		return nil
	}
	l := g.ledger[id.scope]
	for i := len(l) - 1; i >= 0; i-- {
		if l[i].token == id.token {
			return l[i].charge
		}
	}
	return nil
}

// note enters ch in the ledger as attempt token's request.
func (g *gateway) note(scope int32, token core.Token, ch *charge) {
	g.ledger[scope] = append(g.ledger[scope], ledgerEntry{token, ch})
}

// handle is a charge request arriving at the gateway now.
func (g *gateway) handle(w *world, scope int32, req *request, token core.Token, deadline time.Time) gatewayResult {
	if w.Time().After(deadline) {
		w.log(TraceEvent{Scope: scope, Actor: ActorGateway, What: WhatDeadline, Token: token})
		return gatewayResult{}
	}
	if w.cfg.GatewayIdempotent {
		// Its own dedupe by key, for the same request only: a key reused
		// for another payload (after idem's record expired, say) is a new
		// request to it too.
		if ch := g.byKey[scope]; ch != nil && ch.payload == req.payload {
			g.note(scope, token, ch)
			return gatewayResult{charge: ch}
		}
	}
	g.next++
	ch := &charge{id: g.next, scope: scope, amount: req.amount, payload: req.payload, kind: g.answerKind(w)}
	if ch.kind == chargeDeclined || ch.kind == chargeFailed {
		w.log(TraceEvent{Scope: scope, Actor: ActorGateway, What: WhatDecline, Token: token, Arg: int64(ch.kind)})
	} else {
		w.log(TraceEvent{Scope: scope, Actor: ActorGateway, What: WhatCharge, Token: token, Arg: req.amount})
	}
	g.note(scope, token, ch)
	g.byKey[scope] = ch
	w.check.charge(req, token, ch)
	return gatewayResult{charge: ch}
}

// answerKind draws what the gateway answers a request it processes.
func (g *gateway) answerKind(w *world) chargeKind {
	switch {
	case w.fault(FaultGatewayReject, w.rng.gateway):
		return chargeDeclined
	case w.fault(FaultGatewayOddAnswer, w.rng.gateway):
		return chargeFailed + chargeKind(w.rng.gateway.IntN(3))
	}
	return chargeMade
}

// response is the API response for a ledger entry. The executing server and
// the reconciler both take it from the entry, so they agree byte for byte.
func (ch *charge) response() core.Response {
	if ch.resp.StatusCode == 0 {
		ch.resp = ch.build()
	}
	return ch.resp
}

func (ch *charge) build() core.Response {
	headers := []core.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Payload", Value: strconv.FormatInt(ch.payload, 10)}}
	body := make([]byte, 0, 80)
	switch ch.kind {
	case chargeDeclined:
		body = append(strconv.AppendInt(append(body, `{"error":"card_declined","attempt":`...), int64(ch.id), 10), '}')
		return core.Response{StatusCode: http.StatusPaymentRequired, Headers: headers, SchemaVersion: 1, Body: body}
	case chargeFailed:
		body = append(strconv.AppendInt(append(body, `{"error":"processor_error","attempt":`...), int64(ch.id), 10), '}')
		return core.Response{StatusCode: http.StatusBadGateway, Headers: headers, SchemaVersion: 1, Body: body}
	case chargeEmpty:
		return core.Response{StatusCode: http.StatusCreated, Headers: headers, SchemaVersion: 1, Body: []byte{}}
	case chargeLarge:
		body = make([]byte, 0, largeBodyBytes)
		for len(body) < largeBodyBytes-64 {
			body = strconv.AppendInt(append(body, `{"paymentId":"pay-`...), int64(ch.id), 10)
			body = append(body, `"},`...)
		}
		return core.Response{StatusCode: http.StatusCreated, Headers: headers, SchemaVersion: 1, Body: body}
	}
	body = strconv.AppendInt(append(body, `{"paymentId":"pay-`...), int64(ch.id), 10)
	body = strconv.AppendInt(append(body, `","amount":`...), ch.amount, 10)
	body = append(body, `,"status":"created"}`...)
	return core.Response{StatusCode: http.StatusCreated, Headers: headers, SchemaVersion: 1, Body: body}
}

// largeBodyBytes is the size of a large answer: well past a network packet
// and past the column FaultStoreReject narrows (storeColumnBytes), well
// within the policy's stored-response limit. No more: a large answer is
// copied at every replay, and 64 KiB made them a few per cent of a run.
const largeBodyBytes = storeColumnBytes + 8<<10

// payloadOf reads back the payload a response was made for.
func payloadOf(r *core.Response) int64 {
	for _, h := range r.Headers {
		if h.Name == "X-Payload" {
			n, _ := strconv.ParseInt(h.Value, 10, 64)
			return n
		}
	}
	return -1
}

// Long actions: a share of the payments (drawn per seed: none, 3 % or
// 10 %) take the gateway half a lease to two leases (a bank's own
// confirmation step), and their server waits for them up to
// longActionTimeout leases: the attempt's heartbeat extends its lease
// several times while the action runs.
const longActionTimeout = 4

var longActionShares = [...]float64{0, 0.03, 0.1}

func (w *world) netLatency() int64 {
	return between(w.rng.net, w.cfg.NetLatencyMin, w.cfg.NetLatencyMax)
}

func (w *world) gatewayLatency() int64 {
	d := between(w.rng.gateway, w.cfg.GatewayLatencyMin, w.cfg.GatewayLatencyMax)
	if w.fault(FaultGatewaySlow, w.rng.gateway) {
		d *= 20
	}
	return d
}
