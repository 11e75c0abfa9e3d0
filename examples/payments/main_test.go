package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem/core"
)

type service struct {
	t    *testing.T
	url  string
	gw   *Gateway // nil for a service in another process
	stop func()
	done chan error
}

func startService(t *testing.T, o options) *service {
	t.Helper()
	o.addr = "127.0.0.1:0"
	if o.storeKind == "" {
		o.storeKind = "mem"
	}
	if o.workerInterval == 0 {
		o.workerInterval = 20 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	gw := NewGateway(o.gatewayDelay)
	go func() { done <- run(ctx, o, gw, io.Discard, ready) }()
	s := &service{t: t, gw: gw, stop: cancel, done: done}
	select {
	case addr := <-ready:
		s.url = "http://" + addr
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		select { // a run that never returns fails the test, not the whole binary at its timeout
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("run did not return 15 s after its context ended: the server or a worker did not stop")
		}
	})
	return s
}

type reply struct {
	status int
	header http.Header
	body   string
}

func (s *service) pay(principal, key, body string) reply {
	s.t.Helper()
	r, err := s.tryPay(principal, key, body)
	if err != nil {
		s.t.Fatal(err)
	}
	return r
}

// tryPay is pay for another goroutine than the test's: it returns the error.
func (s *service) tryPay(principal, key, body string) (reply, error) {
	return s.tryPayAs("application/json", principal, key, body)
}

// tryPayAs is tryPay with a body of another media type.
func (s *service) tryPayAs(contentType, principal, key, body string) (reply, error) {
	req, err := http.NewRequest(http.MethodPost, s.url+"/payments", strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", contentType)
	if principal != "" {
		req.Header.Set("X-Principal", principal)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}, err
}

const key = "8e03978e-40d5-43e8-bc93-6894a57f9324"

func TestPayments(t *testing.T) {
	s := startService(t, options{})
	// RFC 9110: a 401 has a challenge; RFC 9457: the refusal is a problem.
	if r := s.pay("", key, `{"customerId":"c-1","amountCents":1250,"currency":"EUR"}`); r.status != http.StatusUnauthorized ||
		r.header.Get("WWW-Authenticate") == "" || r.header.Get("Content-Type") != "application/problem+json" ||
		!strings.Contains(r.body, `"code":"unauthenticated"`) || !strings.Contains(r.body, `"status":401`) {
		t.Fatalf("without X-Principal: %d %v %s, want a 401 problem with WWW-Authenticate", r.status, r.header, r.body)
	}
	first := s.pay("alice", key, `{"customerId":"c-1","amountCents":1250,"currency":"EUR"}`)
	if first.status != http.StatusCreated || !strings.Contains(first.body, `"status":"succeeded"`) || first.header.Get("Location") == "" {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	again := s.pay("alice", key, `{"currency":"EUR","amountCents":1250,"customerId":"c-1","clientRequestTime":"now"}`)
	if again.status != first.status || again.body != first.body || again.header.Get("Location") != first.header.Get("Location") ||
		again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %s %v, want the first answer replayed", again.status, again.body, again.header)
	}
	if r := s.pay("alice", key, `{"customerId":"c-1","amountCents":9999,"currency":"EUR"}`); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("another amount under the same key: %d, want 422", r.status)
	}
	if r := s.pay("bob", key, `{"customerId":"c-1","amountCents":1250,"currency":"EUR"}`); r.status != http.StatusCreated || r.body == first.body {
		t.Fatalf("bob with alice's key: %d %s, want his own payment", r.status, r.body)
	}
	if r := s.pay("alice", "short", `{}`); r.status != http.StatusBadRequest {
		t.Fatalf("a short key: %d", r.status)
	}
}

// TestPaymentsTakeOnlyJSON: a body sent as another media type is refused
// (415), not charged: as text/plain, {"amountCents":1,"amountCents":99999}
// skipped the fingerprint's duplicate-member check, and the handler
// charged the second amount.
func TestPaymentsTakeOnlyJSON(t *testing.T) {
	s := startService(t, options{})
	twice := `{"customerId":"c-1","amountCents":1,"amountCents":99999,"currency":"EUR"}`
	r, err := s.tryPayAs("text/plain", "alice", key, twice)
	if err != nil || r.status != http.StatusUnsupportedMediaType || !strings.Contains(r.body, `"code":"unsupported_media_type"`) {
		t.Fatalf("a JSON body as text/plain: %d %s %v, want 415", r.status, r.body, err)
	}
	if r := s.pay("alice", key, twice); r.status != http.StatusBadRequest || !strings.Contains(r.body, "invalid_request") {
		t.Fatalf("a member twice as JSON: %d %s, want 400", r.status, r.body)
	}
	if n := s.gw.Charges(); n != 0 {
		t.Fatalf("%d charges for refused bodies", n)
	}
}

// TestClientTimeoutIsNotAnUnknown: a client gives up while its charge is
// under way (a 400 ms charge, a 50 ms client timeout). Its disconnect does
// not stop the charge: the payment is recorded, the retries get it
// replayed byte for byte (after 409 in_progress while it runs), and it is
// charged once. The key is not left unknown, as it was for the lease and
// the reconciler's backoff (minutes) when the charge was cancelled with
// its client.
func TestClientTimeoutIsNotAnUnknown(t *testing.T) {
	s := startService(t, options{gatewayDelay: 400 * time.Millisecond})
	body := `{"customerId":"c-1","amountCents":1250,"currency":"EUR"}`
	req, err := http.NewRequest(http.MethodPost, s.url+"/payments", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Principal", "alice")
	req.Header.Set("Idempotency-Key", key)
	impatient := &http.Client{Timeout: 50 * time.Millisecond}
	if resp, err := impatient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the impatient client got %d before the charge finished", resp.StatusCode)
	}
	var replays []reply
	for deadline := time.Now().Add(10 * time.Second); len(replays) < 2; time.Sleep(20 * time.Millisecond) {
		r := s.pay("alice", key, body)
		switch {
		case r.status == http.StatusCreated && r.header.Get("Idempotent-Replayed") == "true":
			replays = append(replays, r)
			continue
		case r.status != http.StatusConflict || !strings.Contains(r.body, "in_progress"):
			t.Fatalf("a retry: %d %s, want 409 in_progress until the charge is recorded, then its replay", r.status, r.body)
		case time.Now().After(deadline):
			t.Fatal("the charge was never recorded")
		}
	}
	if replays[0].body != replays[1].body || !strings.Contains(replays[0].body, `"status":"succeeded"`) || s.gw.Charges() != 1 {
		t.Fatalf("replays %s and %s, %d charges; want one charge, replayed byte for byte", replays[0].body, replays[1].body, s.gw.Charges())
	}
}

// TestExcludedFieldDoesNotDecide: the fingerprint excludes
// clientRequestTime, so the service must not answer differently for it: a
// request with it (any JSON value) is charged, and a retry without it, or
// with another value, is that charge replayed. It was a stored 400, then
// replayed to the valid request without the field.
func TestExcludedFieldDoesNotDecide(t *testing.T) {
	s := startService(t, options{})
	first := s.pay("alice", key, `{"customerId":"c-1","amountCents":1250,"currency":"EUR","clientRequestTime":"2026-12-01T10:00:00Z"}`)
	if first.status != http.StatusCreated {
		t.Fatalf("with clientRequestTime: %d %s, want 201", first.status, first.body)
	}
	for _, body := range []string{
		`{"customerId":"c-1","amountCents":1250,"currency":"EUR"}`,
		`{"customerId":"c-1","amountCents":1250,"currency":"EUR","clientRequestTime":1764583200}`,
		`{"customerId":"c-1","amountCents":1250,"currency":"EUR","clientRequestTime":{"not":"a time"}}`,
	} {
		if r := s.pay("alice", key, body); r.status != http.StatusCreated || r.body != first.body || r.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("%s: %d %s, want the first charge replayed", body, r.status, r.body)
		}
	}
	if n := s.gw.Charges(); n != 1 {
		t.Fatalf("%d charges, want 1", n)
	}
}

// get is a GET of path on the service, as principal ("" for none).
func (s *service) get(principal, path string) reply {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if principal != "" {
		req.Header.Set("X-Principal", principal)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// TestLocationIsServed: the Location of a 201 (and of a declined 402)
// answers the payment, to its owner only; another caller, or an id that
// names no payment, gets 404.
func TestLocationIsServed(t *testing.T) {
	s := startService(t, options{})
	for i, customer := range []string{"c-1", "decline-1"} {
		paid := s.pay("alice", key[:30]+fmt.Sprintf("loc%03d", i), `{"customerId":"`+customer+`","amountCents":1250,"currency":"EUR"}`)
		loc := paid.header.Get("Location")
		if paid.status != http.StatusCreated && paid.status != http.StatusPaymentRequired || !strings.HasPrefix(loc, "/payments/") {
			t.Fatalf("%s: %d %s, Location %q", customer, paid.status, paid.body, loc)
		}
		if r := s.get("alice", loc); r.status != http.StatusOK || r.body != paid.body || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: %d %q %s, want 200 and the payment %s", loc, r.status, r.header.Get("Content-Type"), r.body, paid.body)
		}
		if r := s.get("bob", loc); r.status != http.StatusNotFound || r.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s as another caller: %d %s, want 404", loc, r.status, r.body)
		}
		if r := s.get("", loc); r.status != http.StatusUnauthorized {
			t.Errorf("GET %s without a caller: %d, want 401", loc, r.status)
		}
	}
	if r := s.get("alice", "/payments/pay_999999"); r.status != http.StatusNotFound {
		t.Errorf("GET of no payment: %d %s, want 404", r.status, r.body)
	}
}

func TestGatewayFailures(t *testing.T) {
	s := startService(t, options{gatewayDelay: 5 * time.Millisecond})
	declined := s.pay("alice", key, `{"customerId":"decline-1","amountCents":100,"currency":"EUR"}`)
	if declined.status != http.StatusPaymentRequired {
		t.Fatalf("declined: %d %s", declined.status, declined.body)
	}
	if r := s.pay("alice", key, `{"customerId":"decline-1","amountCents":100,"currency":"EUR"}`); r.body != declined.body || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a decline is an outcome, replayed: %d %s", r.status, r.body)
	}

	down := key[:30] + "down00"
	for range 2 { // released each time: the retry runs again
		if r := s.pay("alice", down, `{"customerId":"down-1","amountCents":100,"currency":"EUR"}`); r.status != http.StatusBadGateway {
			t.Fatalf("gateway down: %d %s, want 502 each time (nothing charged, key released)", r.status, r.body)
		}
	}

	lost := key[:30] + "lost00"
	body := `{"customerId":"timeout-1","amountCents":100,"currency":"EUR"}`
	if r := s.pay("alice", lost, body); r.status != http.StatusGatewayTimeout {
		t.Fatalf("timeout: %d %s", r.status, r.body)
	}
	// Until the reconciler has looked at the ledger, retries are told to
	// wait; then they get the charge it found, and nothing is charged twice.
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := s.pay("alice", lost, body)
		if r.status == http.StatusCreated {
			if r.header.Get("Idempotent-Replayed") != "true" || !strings.Contains(r.body, `"customerId":"timeout-1"`) {
				t.Fatalf("settled: %d %s %v", r.status, r.body, r.header)
			}
			break
		}
		if r.status != http.StatusConflict || !strings.Contains(r.body, "outcome_unknown") || r.header.Get("Retry-After") == "" {
			t.Fatalf("while unknown: %d %s", r.status, r.body)
		}
		if time.Now().After(deadline) {
			t.Fatal("the reconciler never settled the lost answer")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStopsCleanly(t *testing.T) {
	s := startService(t, options{})
	s.stop()
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("run after stop: %v", err)
		}
		s.done <- nil // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}

// runMainEnv makes the test binary run main instead of the tests: a test
// starts the program as a process of its own, to send it signals.
const runMainEnv = "PAYMENTS_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return // main exits non-zero itself on failure
	}
	os.Exit(m.Run())
}

// TestSIGINTStopsCleanly starts the program as a process, sends it SIGINT
// while a payment is in flight, and checks that the payment is answered,
// and that the server, the sweeper and the reconciler stop and the process
// exits 0.
func TestSIGINTStopsCleanly(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-addr", "127.0.0.1:0", "-gateway-delay", "2s", "-worker-interval", "20ms")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // if the test fails before the process exits
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var logged []string
	next := func(want string) string {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the process's log ended before %q: %q", want, logged)
				}
				logged = append(logged, l)
				if strings.Contains(l, want) {
					return l
				}
			case <-timeout:
				t.Fatalf("no %q in the log: %q", want, logged)
			}
		}
	}
	m := regexp.MustCompile(`addr=(\S+)`).FindStringSubmatch(next("payments: listening"))
	if m == nil {
		t.Fatalf("no address in %q", logged)
	}
	s := &service{t: t, url: "http://" + m[1]}

	type answer struct {
		reply
		err error
	}
	paid := make(chan answer, 1)
	go func() {
		r, err := s.tryPay("alice", key, `{"customerId":"c-1","amountCents":1250,"currency":"EUR"}`)
		paid <- answer{r, err}
	}()
	time.Sleep(500 * time.Millisecond) // the charge takes 2 s: it is under way
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if r := <-paid; r.err != nil || r.status != http.StatusCreated || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the payment in flight at SIGINT: %d %s %v, want its 201", r.status, r.body, r.err)
	}
	next("payments: stopped") // after the workers returned
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGINT: %v (log %q)", err, logged)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit after SIGINT")
	}
	if _, err := http.Get(s.url + "/payments"); err == nil {
		t.Fatal("the server still answers after it stopped")
	}
}

func TestFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil || o.addr != "127.0.0.1:8080" || o.storeKind != "mem" || o.workerInterval != time.Second {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	o, err = parseFlags([]string{"-store", "pg", "-dsn", pgDSN(), "-addr", ":9000"}, io.Discard)
	if err != nil || o.storeKind != "pg" || o.dsn != pgDSN() || o.addr != ":9000" {
		t.Fatalf("-store pg -dsn: %+v, %v", o, err)
	}
	if _, err := parseFlags([]string{"-nope"}, io.Discard); err == nil {
		t.Fatal("an unknown flag was accepted")
	}
}

func TestStoreFlag(t *testing.T) {
	for o, want := range map[options]string{
		{storeKind: "pg", dsn: "::not a dsn"}:           "-dsn",
		{storeKind: "pg"}:                               "needs -dsn",
		{storeKind: "mongodb"}:                          "want mem, pg or redis",
		{storeKind: "redis"}:                            "needs -redis",
		{storeKind: "redis", redisAddrs: "127.0.0.1:1"}: "redisstore",
	} {
		o.addr = "127.0.0.1:0"
		if err := run(context.Background(), o, NewGateway(0), io.Discard, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want an error that says %q", o, err, want)
		}
	}
}

// readmeExcerpt is the Go block of the README's Example section.
var readmeExcerpt = regexp.MustCompile("(?s)## Example\n.*?```go\n(.*?)```")

// marked is the region of main.go between the README markers, unindented.
func marked(src string) string {
	_, after, _ := strings.Cut(src, "// README:begin\n")
	region, _, _ := strings.Cut(after, "\t// README:end")
	return strings.ReplaceAll("\n"+region, "\n\t", "\n")[1:]
}

// TestReadmeExampleIsThisProgram: the README shows the lines of newApp() that
// build the executor, the route and the workers, as they are compiled and
// tested here; a README edited apart from the program fails.
func TestReadmeExampleIsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	m := readmeExcerpt.FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no Go block in its Example section")
	}
	want := marked(string(src))
	if !strings.Contains(want, "idem.New(") || !bytes.Equal(m[1], []byte(want)) {
		t.Fatalf("README's example differs from examples/payments/main.go between the README markers:\nREADME:\n%s\nmain.go:\n%s", m[1], want)
	}
	if marked(strings.Replace(string(src), "idem.New(st, ", "idem.New( st, ", 1)) == string(m[1]) {
		t.Fatal("the comparison does not see a changed line")
	}
	// The README states the key length the core enforces.
	if want := fmt.Sprintf("Keys must be %d–%d bytes", core.KeyBytesMin, core.KeyBytesMax); !bytes.Contains(readme, []byte(want)) {
		t.Errorf("README.md does not say %q", want)
	}
	// One executor, built in run() at start-up, never in a handler.
	if n := strings.Count(string(src), "idem.New("); n != 1 {
		t.Errorf("main.go builds %d executors, want 1", n)
	}
	handlers, err := os.ReadFile("handlers.go")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(handlers, []byte("idem.New(")) {
		t.Error("handlers.go builds an executor: one per request would not share a store")
	}
}

// readmeExample is the README's Example section.
func readmeExample(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Example\n")
	if !ok {
		t.Fatal("README.md has no Example section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// TestReadmeListsFlagsAndCustomers: the README's Example section has a row
// for each of the program's flags, with its default, and names each test
// customer of the fake gateway; a flag or a customer added without it
// fails here.
func TestReadmeListsFlagsAndCustomers(t *testing.T) {
	section := readmeExample(t)
	flagSet(&options{}, io.Discard).VisitAll(func(f *flag.Flag) {
		row := regexp.MustCompile("(?m)^\\| `-" + regexp.QuoteMeta(f.Name) + "` \\| ([^|]*) \\|").FindStringSubmatch(section)
		switch {
		case row == nil:
			t.Errorf("README's Example section has no row for -%s", f.Name)
		case f.DefValue != "" && !strings.Contains(row[1], "`"+f.DefValue+"`"):
			t.Errorf("README's row for -%s gives the default %q, the program's is %q", f.Name, row[1], f.DefValue)
		}
	})
	for _, prefix := range testCustomers {
		if !strings.Contains(section, "`"+prefix) {
			t.Errorf("README's Example section does not say what the test customers %s... do", prefix)
		}
	}
}

// pgDSN is the test server (IDEM_PG_DSN).
func pgDSN() string {
	if v := os.Getenv("IDEM_PG_DSN"); v != "" {
		return v
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// pgSchema connects to the test server and makes a schema of the test's
// own (prefix and a time), dropped when it ends.
func pgSchema(t *testing.T, prefix string) (*pgxpool.Pool, string) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgDSN())
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL at %s: %v (CI=true: this test must run)", pgDSN(), err)
		}
		t.Skipf("!!! no PostgreSQL at %s (%v): skipping", pgDSN(), err)
	}
	schema := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		pool.Close()
	})
	return pool, schema
}

// TestPaymentsOnPostgres runs the service on PostgreSQL, in a schema of its
// own: concurrent identical requests execute once, the replay is byte for
// byte the stored answer, and another payload is 422.
func TestPaymentsOnPostgres(t *testing.T) {
	ctx := context.Background()
	pool, schema := pgSchema(t, "idem_example")
	s := startService(t, options{storeKind: "pg", dsn: pgDSN(), pgSchema: schema, gatewayDelay: 50 * time.Millisecond})
	body := `{"customerId":"c-1","amountCents":1250,"currency":"EUR"}`
	type sent struct {
		reply
		err error
	}
	replies := make(chan sent, 8)
	for range 8 { // s.pay's t.Fatal would end the goroutine, not the test, which would wait forever
		go func() {
			r, err := s.tryPay("alice", key, body)
			replies <- sent{r, err}
		}()
	}
	created, waited, executed := 0, 0, 0
	var first reply
	for range 8 {
		r := <-replies
		if r.err != nil {
			t.Fatal(r.err)
		}
		switch r.status {
		case http.StatusCreated:
			if created++; r.header.Get("Idempotent-Replayed") == "" {
				first = r.reply
				executed++
			}
		case http.StatusConflict:
			waited++
		default:
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	if executed != 1 || created+waited != 8 {
		t.Fatalf("%d executions among %d created, %d waited", executed, created, waited)
	}
	again := s.pay("alice", key, body)
	if again.status != http.StatusCreated || again.body != first.body || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s, first %s", again.status, again.body, first.body)
	}
	if r := s.pay("alice", key, `{"customerId":"c-1","amountCents":9999,"currency":"EUR"}`); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("another payload: %d %s", r.status, r.body)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+schema+".idem_records").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d records in PostgreSQL: %v", n, err)
	}
}
