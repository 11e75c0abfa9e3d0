package main

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkit/idem/internal/redisserver"
)

// TestPaymentsOnRedis: -store redis charges once, replays byte for byte,
// and a service started again on the same server replays what the first
// one stored.
func TestPaymentsOnRedis(t *testing.T) {
	addr := redisserver.Start(t)
	body := `{"customerId":"c-1","amountCents":1250,"currency":"EUR"}`
	first := startService(t, options{storeKind: "redis", redisAddrs: addr})
	a := first.pay("alice", key, body)
	if a.status != http.StatusCreated {
		t.Fatalf("first: %d %s", a.status, a.body)
	}
	first.stop()
	<-first.done
	first.done <- nil
	second := startService(t, options{storeKind: "redis", redisAddrs: addr})
	b := second.pay("alice", key, body)
	if b.status != a.status || b.body != a.body || b.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after a restart: %d %s %v, want the first answer replayed", b.status, b.body, b.header)
	}
	if r := second.pay("alice", key, strings.Replace(body, "1250", strconv.Itoa(9), 1)); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("another amount: %d", r.status)
	}
	if _, _, err := openRedis(t.Context(), ""); err == nil {
		t.Fatal("-store redis without -redis was accepted")
	}
}
