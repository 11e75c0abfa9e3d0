package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"testing"
	"time"
)

// startNodeService runs the Node payments example (wasm/js/examples/payments)
// on PostgreSQL schema, as its own process, and returns it as a service.
func startNodeService(t *testing.T, schema string) *service {
	t.Helper()
	cmd := exec.Command("node", "../../wasm/js/examples/payments/server.mjs", "--addr", "127.0.0.1:0",
		"--store", "pg", "--dsn", pgDSN(), "--pg-schema", schema, "--gateway-delay-ms", "30")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("node: %v (Node.js 20 and `cd wasm/js && npm ci` are needed)", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("the Node service did not stop 10 s after SIGINT")
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		listening := regexp.MustCompile(`listening on (\S+) `)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return &service{t: t, url: "http://" + a}
	case <-time.After(30 * time.Second):
		t.Fatal("the Node service did not say where it listens within 30 s")
	}
	return nil
}

// TestGoAndNodeServicesShareOneTable races the Go service and the Node
// service on the same keys against one PostgreSQL table: each key is
// executed exactly once across both, every answer for a key is the same
// bytes (status, body, Location, Content-Type), and each service replays
// what the other executed.
func TestGoAndNodeServicesShareOneTable(t *testing.T) {
	ctx := context.Background()
	pool, schema := pgSchema(t, "idem_crosslang")
	goSvc := startService(t, options{storeKind: "pg", dsn: pgDSN(), pgSchema: schema, gatewayDelay: 30 * time.Millisecond}) // runs the migrations
	nodeSvc := startNodeService(t, schema)
	services := []*service{goSvc, nodeSvc}
	names := []string{"go", "node"}

	// Phase 1: one service executes, the other replays, both ways.
	for i, first := range services {
		k := fmt.Sprintf("crosslang-sequential-%s-0001", names[i])
		body := fmt.Sprintf(`{"customerId":"c-%d","amountCents":%d,"currency":"EUR"}`, i, 100+i)
		made := first.pay("alice", k, body)
		other := services[1-i].pay("alice", k, body)
		if made.status != http.StatusCreated || made.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("%s executed: %d %s", names[i], made.status, made.body)
		}
		if other.status != made.status || other.body != made.body || other.header.Get("Location") != made.header.Get("Location") ||
			other.header.Get("Content-Type") != made.header.Get("Content-Type") || other.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s replayed %s's %d %q as %d %q (%v)", names[1-i], names[i], made.status, made.body, other.status, other.body, other.header)
		}
		if r := services[1-i].pay("alice", k, `{"customerId":"c-x","amountCents":1,"currency":"EUR"}`); r.status != http.StatusUnprocessableEntity {
			t.Fatalf("%s answered another body under %s's key %d %s", names[1-i], names[i], r.status, r.body)
		}
	}

	// Phase 2: both services race on the same keys, each request retried
	// while the key is in flight.
	const keys, perService = 24, 3
	type answer struct {
		service int
		reply
	}
	var mu sync.Mutex
	answers := map[string][]answer{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for k := range keys {
		key := fmt.Sprintf("crosslang-race-key-%04d", k)
		customer := "c-race"
		if k%4 == 3 {
			customer = "decline-race" // a 402 is stored and replayed too
		}
		body := fmt.Sprintf(`{"customerId":"%s","amountCents":%d,"currency":"EUR"}`, customer, 1000+k)
		for s := range services {
			for range perService {
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					for attempt := 0; ; attempt++ {
						r, err := services[s].tryPay("alice", key, body)
						if err != nil {
							t.Error(err)
							return
						}
						if r.status == http.StatusConflict && attempt < 200 {
							time.Sleep(10 * time.Millisecond) // in flight on the other service: come back
							continue
						}
						mu.Lock()
						answers[key] = append(answers[key], answer{s, r})
						mu.Unlock()
						return
					}
				})
			}
		}
	}
	wg.Wait()
	crossed := [2]int{}
	for key, as := range answers {
		executed := -1
		for _, a := range as {
			if a.status != http.StatusCreated && a.status != http.StatusPaymentRequired {
				t.Fatalf("%s: %s answered %d %s", key, names[a.service], a.status, a.body)
			}
			if a.header.Get("Idempotent-Replayed") == "" {
				if executed >= 0 {
					t.Fatalf("%s was executed twice: by %s and by %s", key, names[executed], names[a.service])
				}
				executed = a.service
			}
		}
		if executed < 0 {
			t.Fatalf("%s: every answer is a replay: nobody executed it", key)
		}
		for _, a := range as {
			if a.status != as[0].status || a.body != as[0].body || a.header.Get("Location") != as[0].header.Get("Location") ||
				a.header.Get("Content-Type") != as[0].header.Get("Content-Type") {
				t.Fatalf("%s: %s answered %d %q, %s %d %q", key, names[as[0].service], as[0].status, as[0].body, names[a.service], a.status, a.body)
			}
			if a.service != executed {
				crossed[executed]++
			}
		}
	}
	if len(answers) != keys {
		t.Fatalf("%d keys answered, want %d", len(answers), keys)
	}
	t.Logf("keys executed by Go replayed by Node: %d answers; by Node replayed by Go: %d answers", crossed[0], crossed[1])
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+schema+".idem_records").Scan(&n); err != nil || n != keys+2 {
		t.Fatalf("%d records in PostgreSQL, want %d: %v", n, keys+2, err)
	}
}
