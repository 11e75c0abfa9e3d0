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
	ledger map[attemptID]*charge
	byKey  []*charge // by scope: the latest charge
	next   int
}

// attemptID names an attempt: the scope's index and the attempt's token.
type attemptID struct {
	scope int32
	token core.Token
}

// charge is one entry of the ledger: a charge, or a declined attempt.
type charge struct {
	id       int
	scope    int32
	amount   int64
	payload  int64
	declined bool
	resp     core.Response // built once: its slices are never modified
}

type gatewayResult struct {
	charge *charge // nil: refused, nothing happened
}

func (g *gateway) init(requests int) {
	g.ledger = make(map[attemptID]*charge, requests)
	g.byKey = make([]*charge, requests)
}

// find is the reconciler's query: what did the attempt do?
func (g *gateway) find(id attemptID) *charge { return g.ledger[id] }

// handle is a charge request arriving at the gateway now.
func (g *gateway) handle(w *world, scope int32, req *request, token core.Token, deadline time.Time) gatewayResult {
	if w.Time().After(deadline) {
		w.log(TraceEvent{Scope: scope, Actor: ActorGateway, What: WhatDeadline, Token: token})
		return gatewayResult{}
	}
	if w.cfg.GatewayIdempotent {
		if ch := g.byKey[scope]; ch != nil {
			g.ledger[attemptID{scope, token}] = ch
			return gatewayResult{charge: ch}
		}
	}
	g.next++
	ch := &charge{id: g.next, scope: scope, amount: req.amount, payload: req.payload}
	if w.fault(FaultGatewayReject, w.rng.gateway) {
		ch.declined = true
		w.log(TraceEvent{Scope: scope, Actor: ActorGateway, What: WhatDecline, Token: token})
	} else {
		w.log(TraceEvent{Scope: scope, Actor: ActorGateway, What: WhatCharge, Token: token, Arg: req.amount})
	}
	g.ledger[attemptID{scope, token}] = ch
	g.byKey[scope] = ch
	w.check.charge(req, ch)
	return gatewayResult{charge: ch}
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
	if ch.declined {
		body = append(strconv.AppendInt(append(body, `{"error":"card_declined","attempt":`...), int64(ch.id), 10), '}')
		return core.Response{StatusCode: http.StatusPaymentRequired, Headers: headers, SchemaVersion: 1, Body: body}
	}
	body = strconv.AppendInt(append(body, `{"paymentId":"pay-`...), int64(ch.id), 10)
	body = strconv.AppendInt(append(body, `","amount":`...), ch.amount, 10)
	body = append(body, `,"status":"created"}`...)
	return core.Response{StatusCode: http.StatusCreated, Headers: headers, SchemaVersion: 1, Body: body}
}

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
