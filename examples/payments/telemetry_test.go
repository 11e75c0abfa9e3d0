package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// otlpSink is an OTLP/HTTP receiver that keeps the bodies posted to
// /v1/traces.
type otlpSink struct {
	mu     sync.Mutex
	traces [][]byte
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/v1/traces" {
		s.mu.Lock()
		s.traces = append(s.traces, body)
		s.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (s *otlpSink) bodies() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, t := range s.traces {
		b.Write(t)
	}
	return b.String()
}

// TestTelemetryExported: with -metrics-addr, the idempotency instruments
// are at /metrics (an executed payment, its replay and a mismatch each
// counted under the use case, never a key); with -otlp-endpoint, each
// request's span reaches the collector once the service stops.
func TestTelemetryExported(t *testing.T) {
	sink := &otlpSink{}
	collector := httptest.NewServer(sink)
	defer collector.Close()
	metricsAddr := freeAddr(t)
	s := startService(t, options{metricsAddr: metricsAddr, otlpEndpoint: collector.URL})
	body := `{"customerId":"c-1","amountCents":1250,"currency":"EUR"}`
	if r := s.pay("alice", key, body); r.status != http.StatusCreated {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	if r := s.pay("alice", key, body); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %v", r.status, r.header)
	}
	if r := s.pay("alice", key, `{"customerId":"c-1","amountCents":9,"currency":"EUR"}`); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("mismatch: %d", r.status)
	}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`api_idempotency_reserve_created_count_total{`,
		`api_idempotency_reserve_replay_count_total{`,
		`api_idempotency_reserve_key_misuse_count_total{`,
		`api_idempotency_attempt_duration_seconds_bucket{`,
		`api_idempotency_response_size_bytes_bucket{`,
		`idem_use_case="payments.create"`,
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(string(page), key) || strings.Contains(string(page), "alice") {
		t.Error("/metrics names a key or a principal")
	}
	s.stop()
	if err := <-s.done; err != nil {
		t.Fatal(err)
	}
	s.done <- nil // for the cleanup
	traces := sink.bodies()
	if !strings.Contains(traces, "idem.Do") || !strings.Contains(traces, "idem.answer") || !strings.Contains(traces, "replayed") {
		t.Fatalf("the collector got %d bytes of traces without idem's spans", len(traces))
	}
	if strings.Contains(traces, key) {
		t.Error("a span names the key")
	}
}

// TestNoTelemetryByDefault: without the flags nothing listens but the API.
func TestNoTelemetryByDefault(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil || o.metricsAddr != "" || o.otlpEndpoint != "" {
		t.Fatalf("defaults %+v %v", o, err)
	}
	tel, err := newTelemetry(t.Context(), o, nil)
	if err != nil || tel.metrics != nil || len(tel.shutdown) != 0 {
		t.Fatalf("%+v %v", tel, err)
	}
}

// TestOTLPEndpoint: a collector's base URL gets OTLP's traces path; a
// URL with a path is kept; anything else is refused at start-up.
func TestOTLPEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4318":             "http://127.0.0.1:4318/v1/traces",
		"https://otel.example/":             "https://otel.example/v1/traces",
		"http://127.0.0.1:4318/custom/path": "http://127.0.0.1:4318/custom/path",
		"127.0.0.1:4318":                    "",
		"ftp://x":                           "",
	} {
		got, err := tracesURL(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
}
