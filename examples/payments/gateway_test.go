package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

func attemptFor(customer string, token core.Token, lease time.Duration) idem.Attempt {
	return idem.Attempt{
		Scope:       core.Scope{Principal: "alice", UseCase: "payments.create", Key: "k-" + customer + "-0123456789abcdef"},
		Token:       token,
		LockedUntil: time.Now().Add(lease),
	}
}

func recordOf(at idem.Attempt) idem.Record {
	return idem.Record{Scope: at.Scope, Token: at.Token, Status: core.StatusUnknown, LockedUntil: at.LockedUntil}
}

// TestGatewayModes: the fake gateway is slow, declines, fails before
// sending, and times out as its documentation says, and its ledger (the
// reconciler's Check) tells what each attempt left behind.
func TestGatewayModes(t *testing.T) {
	ctx := context.Background()
	const delay = 100 * time.Millisecond
	gw := NewGateway(delay)
	pay := func(customer string) Payment { return Payment{CustomerID: customer, AmountCents: 100, Currency: "EUR"} }
	check := func(at idem.Attempt, want core.Verdict, status int) {
		t.Helper()
		f, err := gw.Check(ctx, recordOf(at))
		if err != nil || f.Verdict != want || f.Response.StatusCode != status {
			t.Fatalf("Check %s: %v, status %d (%v); want %v, status %d", at.Scope.Key, f.Verdict, f.Response.StatusCode, err, want, status)
		}
	}

	// Slow: every charge takes the delay.
	ok := attemptFor("c-1", 1, time.Minute)
	start := time.Now()
	p, err := gw.Charge(ctx, ok, pay("c-1"))
	if took := time.Since(start); err != nil || p.Status != "succeeded" || took < delay {
		t.Fatalf("a charge: %+v %v after %v, want succeeded after at least %v", p, err, took, delay)
	}
	if again, err := gw.Charge(ctx, ok, pay("c-1")); err != nil || again != p || gw.Charges() != 1 {
		t.Fatalf("the same attempt again: %+v %v, %d charges; want the same charge, once", again, err, gw.Charges())
	}
	check(ok, core.VerdictExecuted, http.StatusCreated)

	// Declined: a charge with the declined status, answered 402.
	declined := attemptFor("decline-1", 2, time.Minute)
	if p, err := gw.Charge(ctx, declined, pay("decline-1")); err != nil || p.Status != "declined" || gw.Charges() != 2 {
		t.Fatalf("decline: %+v %v, %d charges", p, err, gw.Charges())
	}
	check(declined, core.VerdictExecuted, http.StatusPaymentRequired)

	// Fails before sending: at once, nothing charged.
	down := attemptFor("down-1", 3, time.Minute)
	start = time.Now()
	if _, err := gw.Charge(ctx, down, pay("down-1")); !errors.Is(err, ErrRefusedBeforeSending) || gw.Charges() != 2 || time.Since(start) >= delay {
		t.Fatalf("down: %v, %d charges, after %v", err, gw.Charges(), time.Since(start))
	}

	// Times out: charged, but the answer is lost; the ledger has it.
	lost := attemptFor("timeout-1", 4, time.Minute)
	if _, err := gw.Charge(ctx, lost, pay("timeout-1")); !errors.Is(err, ErrTimeout) || gw.Charges() != 3 {
		t.Fatalf("timeout: %v, %d charges", err, gw.Charges())
	}
	check(lost, core.VerdictExecuted, http.StatusCreated)

	// The caller gives up during the delay: nothing charged, and the
	// ledger says not executed only once the attempt's deadline has passed.
	gaveUp := attemptFor("c-2", 5, 150*time.Millisecond)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := gw.Charge(cctx, gaveUp, pay("c-2")); !errors.Is(err, context.DeadlineExceeded) || gw.Charges() != 3 {
		t.Fatalf("cancelled during the delay: %v, %d charges", err, gw.Charges())
	}
	check(gaveUp, core.VerdictStillUnknown, 0)
	time.Sleep(time.Until(gaveUp.LockedUntil) + 10*time.Millisecond)
	check(gaveUp, core.VerdictNotExecuted, 0)

	// A charge that arrives after the attempt's deadline is refused.
	late := attemptFor("c-3", 6, delay/2)
	if _, err := gw.Charge(ctx, late, pay("c-3")); !errors.Is(err, ErrPastDeadline) || gw.Charges() != 3 {
		t.Fatalf("past the deadline: %v, %d charges", err, gw.Charges())
	}
}

// TestSlowGatewayOverHTTP: with -gateway-delay the service answers after
// the delay, and an identical request sent meanwhile is not charged again:
// it waits and is replayed, or is told to come back (409).
func TestSlowGatewayOverHTTP(t *testing.T) {
	const delay = 400 * time.Millisecond
	s := startService(t, options{gatewayDelay: delay})
	body := `{"customerId":"c-1","amountCents":1250,"currency":"EUR"}`
	first := make(chan reply, 1)
	start := time.Now()
	go func() {
		r, err := s.tryPay("alice", key, body)
		if err != nil {
			t.Error(err)
		}
		first <- r
	}()
	time.Sleep(delay / 4)
	meanwhile := s.pay("alice", key, body)
	r := <-first
	if took := time.Since(start); r.status != http.StatusCreated || took < delay {
		t.Fatalf("slow gateway: %d %s after %v, want 201 after at least %v", r.status, r.body, took, delay)
	}
	switch {
	case meanwhile.status == http.StatusCreated && meanwhile.header.Get("Idempotent-Replayed") == "true" && meanwhile.body == r.body:
	case meanwhile.status == http.StatusConflict && strings.Contains(meanwhile.body, "in_progress") && meanwhile.header.Get("Retry-After") != "":
	default:
		t.Fatalf("the same request while the first is charged: %d %s %v, want a replay or 409 in_progress", meanwhile.status, meanwhile.body, meanwhile.header)
	}
}

// TestOnlyTheTestPrefixesMisbehave: a customer id misbehaves only when it
// starts with a whole test prefix, dash included: "download-1" or
// "declined-1" are customers like any other, charged.
func TestOnlyTheTestPrefixesMisbehave(t *testing.T) {
	gw := NewGateway(0)
	for i, customer := range []string{"download-1", "down", "declined-1", "decline", "timeouts-1", "timeout"} {
		before := gw.Charges()
		p, err := gw.Charge(context.Background(), attemptFor(customer, core.Token(i+1), time.Minute),
			Payment{CustomerID: customer, AmountCents: 100, Currency: "EUR"})
		if err != nil || p.Status != "succeeded" || gw.Charges() != before+1 {
			t.Errorf("customer %q: %+v %v; want charged once and succeeded", customer, p, err)
		}
	}
}
