package pgxstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// TestGoAndNodeShareOneTable: a Go service (Do over this store) and a Node
// service (wasm/js's executor over its PostgreSQL store, pgstore.mjs) on
// one table. Node replays what Go executed, and Go what Node executed,
// byte for byte; racing on the same keys, the two execute each key once
// between them, and answer it the same. (The Node side is
// wasm/js/testdata/crosslang.mjs; its packages come from wasm/js's
// lockfile, which make test installs with npm ci.)
func TestGoAndNodeShareOneTable(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{})
	p := core.PolicyDefault()
	p.InFlightWait = 5 * time.Second
	ex, err := idem.New(s, idem.WithPolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	fp := core.Fingerprint(sha256.Sum256([]byte("cross-language")))
	request := func(key string) idem.Request {
		return idem.Request{Scope: core.Scope{Tenant: "acme", Principal: "user-1", UseCase: "payments.create", Key: key}, Fingerprint: fp}
	}
	var goExecutions atomic.Int32
	action := func(key string, d time.Duration) idem.Action {
		return func(context.Context, idem.Attempt) (idem.Response, error) {
			goExecutions.Add(1)
			time.Sleep(d)
			return idem.Response{StatusCode: 201, Headers: []core.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Server", Value: "go é"}},
				Body: []byte(`{"key":"` + key + `","by":"go"}`)}, nil
		}
	}
	ctx := context.Background()
	first, err := ex.Do(ctx, request("go-first-0123456789"), action("go-first-0123456789", 0))
	if err != nil {
		t.Fatal(err)
	}

	race := []string{"race-1-0123456789ab", "race-2-0123456789ab", "race-3-0123456789ab", "race-4-0123456789ab", "race-5-0123456789ab"}
	plan, _ := json.Marshal(map[string][]string{"replay": {"go-first-0123456789"}, "execute": {"node-first-012345678"}, "race": race})
	cmd := exec.Command("node", "../../wasm/js/testdata/crosslang.mjs")
	// Both race from the same instant, far enough ahead for Node to start
	// and load the module; Node takes the keys in the other order.
	startAt := time.Now().Add(2 * time.Second)
	cmd.Env = append(cmd.Environ(), "IDEM_PG_DSN="+dsn(), "IDEM_PG_SCHEMA="+db.schema, "IDEM_PLAN="+string(plan),
		"IDEM_START_AT="+strconv.FormatInt(startAt.UnixMilli(), 10))
	var goRace sync.Map
	var wg sync.WaitGroup
	out, nodeErr := make(chan []byte, 1), make(chan error, 1)
	go func() {
		b, err := cmd.Output()
		out <- b
		nodeErr <- err
	}()
	time.Sleep(time.Until(startAt))
	for _, key := range race {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(mrand.IntN(40)) * time.Millisecond) // Node jitters its starts the same way
			r, err := ex.Do(ctx, request(key), action(key, 300*time.Millisecond))
			if err != nil {
				t.Errorf("Go, %s: %v", key, err)
				return
			}
			goRace.Store(key, r)
		}()
	}
	wg.Wait()
	raw := <-out
	if err := <-nodeErr; err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	var node struct {
		Answers    map[string]nodeAnswer `json:"answers"`
		Executions int32                 `json:"executions"`
	}
	if err := json.Unmarshal(raw, &node); err != nil {
		t.Fatalf("node's output %q: %v", raw, err)
	}

	// Node replays Go's execution, byte for byte.
	if d := node.Answers["go-first-0123456789"].differs(first, "replayed"); d != "" {
		t.Errorf("Node's answer to the key Go executed: %s", d)
	}
	// Go replays Node's execution, byte for byte.
	nodeFirst := node.Answers["node-first-012345678"]
	if nodeFirst.Kind != 1 {
		t.Fatalf("Node did not execute its own new key: %+v", nodeFirst)
	}
	r, err := ex.Do(ctx, request("node-first-012345678"), action("node-first-012345678", 0))
	if err != nil {
		t.Fatal(err)
	}
	if d := nodeFirst.differs(r, "executed"); d != "" || r.Kind != idem.ResultReplayed {
		t.Errorf("Go's answer to the key Node executed (%v): %s", r.Kind, d)
	}
	// Racing: each key executed once between them, answered the same.
	t.Logf("race over %d keys: Go executed %d, Node %d", len(race), goExecutions.Load()-1, node.Executions-1)
	if total := goExecutions.Load() - 1 + node.Executions - 1; total != int32(len(race)) {
		t.Errorf("the race executed %d times (Go %d, Node %d), want once per key: %d", total, goExecutions.Load()-1, node.Executions-1, len(race))
	}
	for _, key := range race {
		g, _ := goRace.Load(key)
		gr, _ := g.(idem.Result)
		n := node.Answers[key]
		if d := n.differs(gr, ""); d != "" {
			t.Errorf("%s: Go and Node answered differently: %s", key, d)
		}
	}
}

type nodeAnswer struct {
	Kind    int               `json:"kind"`
	Token   string            `json:"token"`
	Status  int               `json:"status"`
	Headers []json.RawMessage `json:"headers"`
	Body    *string           `json:"body"`
}

// differs compares Node's answer with Go's result: the response byte for
// byte and the token; kind, if not empty, is the kind Node's must be.
func (n nodeAnswer) differs(r idem.Result, kind string) string {
	if kind != "" && n.Kind != map[string]int{"executed": 1, "replayed": 2}[kind] {
		return fmt.Sprintf("Node's kind %d, want %s", n.Kind, kind)
	}
	if n.Token != strconv.FormatUint(uint64(r.Token), 10) || n.Status != r.Response.StatusCode {
		return fmt.Sprintf("Node token %s status %d, Go token %d status %d", n.Token, n.Status, r.Token, r.Response.StatusCode)
	}
	if n.Body == nil || *n.Body != base64.StdEncoding.EncodeToString(r.Response.Body) {
		return fmt.Sprintf("bodies differ: Node %v, Go %q", n.Body, r.Response.Body)
	}
	if len(n.Headers) != len(r.Response.Headers) {
		return fmt.Sprintf("Node %d headers, Go %d", len(n.Headers), len(r.Response.Headers))
	}
	for i, h := range r.Response.Headers {
		var nh struct{ Name, Value string }
		_ = json.Unmarshal(n.Headers[i], &nh)
		if nh.Name != h.Name || nh.Value != h.Value {
			return fmt.Sprintf("header %d: Node %s=%q, Go %s=%q", i, nh.Name, nh.Value, h.Name, h.Value)
		}
	}
	return ""
}
