package main

import (
	"fmt"
	"net/http"
	"testing"
)

// TestPaymentValidationAtItsLimits: the service charges a positive amount
// (1 cent is, 0 is not) in a 3-letter currency (not 2, not 4) for a named
// customer, and refuses anything else, or a member it does not know, with
// a 400 that is stored and replayed like any answer.
func TestPaymentValidationAtItsLimits(t *testing.T) {
	s := startService(t, options{})
	for i, c := range []struct {
		body   string
		status int
	}{
		{`{"customerId":"c-1","amountCents":1,"currency":"EUR"}`, http.StatusCreated},
		{`{"customerId":"c-1","amountCents":0,"currency":"EUR"}`, http.StatusBadRequest},
		{`{"customerId":"c-1","amountCents":-1,"currency":"EUR"}`, http.StatusBadRequest},
		{`{"customerId":"c-1","amountCents":1,"currency":"EU"}`, http.StatusBadRequest},
		{`{"customerId":"c-1","amountCents":1,"currency":"EURO"}`, http.StatusBadRequest},
		{`{"customerId":"","amountCents":1,"currency":"EUR"}`, http.StatusBadRequest},
		{`{"customerId":"c-1","amountCents":1,"currency":"EUR","note":"a member it does not know"}`, http.StatusBadRequest},
	} {
		k := key[:30] + fmt.Sprintf("val%03d", i)
		first := s.pay("alice", k, c.body)
		if first.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.body, first.status, first.body, c.status)
		}
		if again := s.pay("alice", k, c.body); again.status != first.status || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("%s again: %d %s, want the first answer replayed", c.body, again.status, again.body)
		}
	}
	if n := s.gw.Charges(); n != 1 {
		t.Fatalf("%d charges, want 1 (the one valid payment)", n)
	}
}
