package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/internal/redisserver"
	redisstore "github.com/idemkit/idem/store/redis"
)

// TestOnRedis: -redis selects the Redis store (a test server of its own):
// list, show and stats read it as they read PostgreSQL.
func TestOnRedis(t *testing.T) {
	addr := redisserver.Start(t)
	client := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { client.Close() })
	s, err := redisstore.New(context.Background(), client, redisstore.Options{Prefix: "ctl"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	p := idem.PolicyDefault()
	p.InFlightWait, p.ReconcileAttemptsMax = 0, 1
	ex, err := idem.New(s, idem.WithPolicy(p))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{ex: ex}
	f.records(t)
	ctl := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"-redis", addr, "-redis-prefix", "ctl"}, args...), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	code, out, errOut := ctl("-json", "list", "-status", "unknown")
	var page struct {
		Records []recordView `json:"records"`
	}
	if err := json.Unmarshal([]byte(out), &page); code != exitOK || err != nil || len(page.Records) != 1 || page.Records[0].Key != lostKey {
		t.Fatalf("list: exit %d, %v: %s%s", code, err, out, errOut)
	}
	code, out, errOut = ctl("-json", "stats")
	var st struct {
		ByStatus map[string]int64 `json:"by_status"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != exitOK || err != nil || st.ByStatus["completed"] != 3 || st.ByStatus["unknown"] != 1 {
		t.Fatalf("stats: exit %d, %v: %s%s", code, err, out, errOut)
	}
	if code, out, errOut := ctl("show", "-principal", "alice", "-use-case", "payments.create", "-key", lostKey); code != exitOK || !strings.Contains(out, "unknown") {
		t.Fatalf("show: exit %d: %s%s", code, out, errOut)
	}
	token := strconv.FormatUint(page.Records[0].Token, 10)
	scope := []string{"-principal", "alice", "-use-case", "payments.create", "-key", lostKey, "-token", token}
	if code, out, errOut := ctl(append(append([]string{"resolve"}, scope...), "-verdict", "not_executed", "-who", "bob", "-why", "no charge")...); code != exitOK || !strings.Contains(out, "failed_retryable") {
		t.Fatalf("resolve: exit %d: %s%s", code, out, errOut)
	}
	if code, out, errOut := ctl(append([]string{"evict"}, scope...)[:len(scope)+1]...); code != exitUsage {
		t.Fatalf("evict without who: exit %d: %s%s", code, out, errOut)
	}
	if code, out, errOut := ctl(append(append([]string{"evict"}, scope...), "-who", "bob", "-why", "erasure")...); code != exitOK {
		t.Fatalf("evict: exit %d: %s%s", code, out, errOut)
	}
	code, out, errOut = ctl("-json", "show", "-principal", "alice", "-use-case", "payments.create", "-key", lostKey)
	var shown struct {
		Status string      `json:"status"`
		Audits []auditView `json:"audits"`
	}
	if err := json.Unmarshal([]byte(out), &shown); code != exitOK || err != nil || shown.Status != "absent" || len(shown.Audits) != 2 ||
		shown.Audits[0].Verdict != "not_executed" || shown.Audits[1].Decision != "evicted" {
		t.Fatalf("show after resolve and evict: exit %d, %v: %s%s", code, err, out, errOut)
	}
	if code, _, errOut := ctl("-dsn", dsn(), "stats"); code != exitUsage || !strings.Contains(errOut, "not both") {
		t.Fatalf("-dsn and -redis: exit %d: %s", code, errOut)
	}
}
