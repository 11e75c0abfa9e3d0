package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/idemkit/idem/core"
)

// Actor names who did something: a client, a server, the store, the
// gateway, or a periodic worker.
type Actor uint8

const (
	ActorClient Actor = iota
	ActorServer
	ActorStore
	ActorGateway
	ActorReconciler
	ActorSweeper
	ActorWorld
	ActorOperator
)

var actorNames = [...]string{"client", "server", "store", "gateway", "reconciler", "sweeper", "world", "operator"}

func (a Actor) String() string { return actorNames[a] }

// What is the kind of a trace event.
type What uint8

const (
	WhatSend          What = iota // client sends attempt Arg to server Arg2
	WhatLost                      // a message was lost (Arg: 0 request, 1 response)
	WhatAnswer                    // client receives status Arg
	WhatDone                      // client has its definitive answer, status Arg
	WhatRefused                   // client's connection refused (server down)
	WhatTimeout                   // client's attempt Arg timed out
	WhatDecision                  // server: the core decided Arg (core.DecisionKind) for event Arg2 (core.EventKind)
	WhatStoreError                // server: a store call failed (Arg: event kind)
	WhatWrite                     // store: a write applied (Arg: core.WriteKind, Arg2: new status); Token = new token
	WhatFaultAfter                // store: the write applied, then the caller was told it failed
	WhatCharge                    // gateway: charged (Arg: amount)
	WhatDecline                   // gateway: declined the card
	WhatDeadline                  // gateway: refused a request that arrived after its deadline
	WhatGatewayCall               // server: calls the gateway for attempt Token
	WhatActionEnded               // server: the action ended (Arg: 0 completed, 1 not executed, 2 unknown, 3 panicked)
	WhatCrash                     // server crashed
	WhatRestart                   // server restarted
	WhatPause                     // server paused for Arg ns
	WhatReply                     // server replies status Arg
	WhatHeal                      // the fault phase ended
	WhatStall                     // a gateway request or a heartbeat stalls (Arg: for how long)
	WhatLeaseLost                 // server: a heartbeat found the lease lost; the action is cancelled
	WhatCheck                     // reconciler: its look at the ledger went wrong (Arg: how)
	WhatStoreRejected             // store: rejected a write for good (Arg: the response's body bytes)
	WhatHangUp                    // client hangs up on attempt Arg (its servers' contexts are done)
	WhatPanic                     // server: the action panicked; the Flow raises it again once recorded
	WhatShow                      // operator: looked at the record of attempt Token
	WhatEvict                     // operator: evicted by Token; the core decided Arg (core.DecisionKind), or the store failed (Arg -1)
	whatCount
)

var whatNames = [whatCount]string{
	"send", "lost", "answer", "done", "rejected", "timeout", "decision", "store_error", "write", "fault_after_write",
	"charge", "decline", "deadline", "gateway_call", "action_ended", "crash", "restart", "pause", "reply", "heal",
	"stall", "lease_lost", "check_bad", "store_rejected", "hang_up", "panic", "show", "evict",
}

func (w What) String() string {
	if w < whatCount {
		return whatNames[w]
	}
	return fmt.Sprintf("what(%d)", uint8(w))
}

// TraceEvent is one traced step of a run, in virtual time.
type TraceEvent struct {
	At      int64 // virtual nanoseconds since the start
	Scope   int32 // index of the scope (-1: none)
	Actor   Actor
	ActorID int32
	What    What
	Token   core.Token
	Arg     int64
	Arg2    int64
}

// Describe renders an event as one line: time, actor, text.
func (e *TraceEvent) Describe() string {
	return fmt.Sprintf("%12s  %-13s %s", fmtTime(e.At), e.actor(), e.Text())
}

// Text says what happened, without time or actor.
func (e *TraceEvent) Text() string {
	var b strings.Builder
	switch e.What {
	case WhatSend:
		fmt.Fprintf(&b, "sends attempt %d to server-%d", e.Arg, e.Arg2)
	case WhatLost:
		fmt.Fprintf(&b, "message lost (%s)", [...]string{"request", "response", "gateway request", "gateway response"}[e.Arg])
	case WhatAnswer:
		fmt.Fprintf(&b, "receives %d", e.Arg)
	case WhatDone:
		fmt.Fprintf(&b, "has its answer: %d", e.Arg)
	case WhatRefused:
		b.WriteString("connection refused")
	case WhatTimeout:
		fmt.Fprintf(&b, "attempt %d timed out", e.Arg)
	case WhatDecision:
		fmt.Fprintf(&b, "%v -> %v", core.EventKind(e.Arg2), core.DecisionKind(e.Arg))
	case WhatStoreError:
		fmt.Fprintf(&b, "%v: store error", core.EventKind(e.Arg))
	case WhatWrite:
		fmt.Fprintf(&b, "%v -> %v", core.WriteKind(e.Arg), core.Status(e.Arg2))
	case WhatFaultAfter:
		b.WriteString("write applied, error returned (ambiguous commit)")
	case WhatCharge:
		fmt.Fprintf(&b, "charges %d", e.Arg)
	case WhatDecline:
		b.WriteString("declines the card")
	case WhatDeadline:
		b.WriteString("refuses: the attempt's deadline passed")
	case WhatGatewayCall:
		b.WriteString("calls the gateway")
	case WhatActionEnded:
		fmt.Fprintf(&b, "action ended: %s", [...]string{"completed", "not executed", "unknown", "panicked"}[e.Arg])
	case WhatCrash:
		b.WriteString("crashes")
	case WhatRestart:
		b.WriteString("restarts")
	case WhatPause:
		fmt.Fprintf(&b, "pauses for %v", time.Duration(e.Arg))
	case WhatReply:
		fmt.Fprintf(&b, "replies %d", e.Arg)
	case WhatHeal:
		b.WriteString("faults stop")
	case WhatStall:
		fmt.Fprintf(&b, "stalls for %v", time.Duration(e.Arg))
	case WhatLeaseLost:
		b.WriteString("lease lost, action cancelled")
	case WhatHangUp:
		fmt.Fprintf(&b, "hangs up on attempt %d", e.Arg)
	case WhatPanic:
		b.WriteString("action panicked")
	case WhatShow:
		b.WriteString("looks at the record")
	case WhatEvict:
		if e.Arg < 0 {
			b.WriteString("evicts by the token it read: the store failed")
		} else {
			fmt.Fprintf(&b, "evicts by the token it read -> %v", core.DecisionKind(e.Arg))
		}
	case WhatCheck:
		fmt.Fprintf(&b, "check goes wrong: %s", checkBadNames[e.Arg])
	case WhatStoreRejected:
		fmt.Fprintf(&b, "rejects a %d-byte response, for good", e.Arg)
	}
	if e.Token != 0 {
		fmt.Fprintf(&b, " [token %d]", e.Token)
	}
	return b.String()
}

func (e *TraceEvent) actor() string {
	switch e.Actor {
	case ActorStore, ActorGateway, ActorReconciler, ActorSweeper, ActorWorld, ActorOperator:
		return e.Actor.String()
	}
	return fmt.Sprintf("%v-%d", e.Actor, e.ActorID)
}

func fmtTime(ns int64) string {
	return fmt.Sprintf("%.6fs", float64(ns)/1e9)
}
