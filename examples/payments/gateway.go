package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// Payment is what a client asks for, and what it gets back.
type Payment struct {
	ID          string `json:"id,omitempty"`
	CustomerID  string `json:"customerId"`
	AmountCents int64  `json:"amountCents"`
	Currency    string `json:"currency"`
	Status      string `json:"status,omitempty"` // succeeded or declined
}

// The fake gateway's failures, chosen by the customer id so that a demo (and
// the tests) can ask for each: customers whose id starts with
//
//	decline-  are declined (a business outcome: stored and replayed, 402);
//	down-     fail before anything is sent (the key is released: a retry runs again);
//	timeout-  are charged, but the answer is lost (the key becomes unknown and
//	          the reconciler finds the charge in the ledger).
//
// Every charge waits the gateway's delay first (slow), within the deadline.
const (
	customerDeclined = "decline-"
	customerDown     = "down-"
	customerTimeout  = "timeout-"
)

// testCustomers are the prefixes above, for the README's check.
var testCustomers = []string{customerDeclined, customerDown, customerTimeout}

var (
	ErrRefusedBeforeSending = errors.New("gateway: connection refused, nothing was sent")
	ErrTimeout              = errors.New("gateway: timed out waiting for the answer")
	ErrPastDeadline         = errors.New("gateway: the attempt's deadline has passed, refused")
)

// Gateway is a payment provider with a ledger of charges, keyed by the
// attempt that made them (scope and fencing token), as a real provider
// keys them by the idempotency key you send it.
type Gateway struct {
	delay time.Duration

	mu     sync.Mutex
	ledger map[string]Payment // by attempt (attemptID)
	byID   map[string]ownedPayment
}

// ownedPayment is a payment with the principal who made it.
type ownedPayment struct {
	Payment
	principal string
}

func NewGateway(delay time.Duration) *Gateway {
	return &Gateway{delay: delay, ledger: map[string]Payment{}, byID: map[string]ownedPayment{}}
}

// Payment looks a charge up by its id.
func (g *Gateway) Payment(id string) (ownedPayment, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p, ok := g.byID[id]
	return p, ok
}

// attemptID names one attempt for the gateway: scope and token together.
func attemptID(scope core.Scope, token core.Token) string {
	return fmt.Sprintf("%q/%d", scope.String(), token)
}

// Charge charges p once per attempt. It refuses a charge that arrives after
// deadline (the attempt's lease end): that is what lets Check conclude
// "not executed" once the lease has passed.
func (g *Gateway) Charge(ctx context.Context, at idem.Attempt, p Payment) (Payment, error) {
	if strings.HasPrefix(p.CustomerID, customerDown) {
		return Payment{}, ErrRefusedBeforeSending
	}
	select {
	case <-time.After(g.delay):
	case <-ctx.Done():
		return Payment{}, context.Cause(ctx) // may or may not have reached the gateway: unknown
	}
	if time.Now().After(at.LockedUntil) {
		return Payment{}, ErrPastDeadline
	}
	g.mu.Lock()
	id := attemptID(at.Scope, at.Token)
	charged, ok := g.ledger[id]
	if !ok {
		charged = p
		charged.ID = fmt.Sprintf("pay_%d", at.Token)
		charged.Status = "succeeded"
		if strings.HasPrefix(p.CustomerID, customerDeclined) {
			charged.Status = "declined"
		}
		g.ledger[id] = charged
		g.byID[charged.ID] = ownedPayment{charged, at.Scope.Principal}
	}
	g.mu.Unlock()
	if strings.HasPrefix(p.CustomerID, customerTimeout) {
		return Payment{}, ErrTimeout // charged, but the answer never arrives
	}
	return charged, nil
}

// Charges is how many charges the ledger holds.
func (g *Gateway) Charges() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.ledger)
}

// Check is the reconciler's look at the ledger for an unknown attempt:
// charged means executed (with the response the handler would have sent);
// absent means not executed only once the attempt's deadline has passed,
// since a charge still on its way could land before it.
func (g *Gateway) Check(ctx context.Context, rec idem.Record) (idem.Finding, error) {
	g.mu.Lock()
	p, ok := g.ledger[attemptID(rec.Scope, rec.Token)]
	g.mu.Unlock()
	switch {
	case ok:
		resp, err := paymentResponse(p)
		if err != nil {
			return idem.Finding{}, err
		}
		return idem.Finding{Verdict: core.VerdictExecuted, Response: resp}, nil
	case time.Now().After(rec.LockedUntil):
		return idem.Finding{Verdict: core.VerdictNotExecuted}, nil
	}
	return idem.Finding{Verdict: core.VerdictStillUnknown}, nil
}
