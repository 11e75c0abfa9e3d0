package idemotel_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemotel"
	"github.com/idemkit/idem/internal/fakeclock"
	memstore "github.com/idemkit/idem/store/mem"
)

// world is an executor over a memory store on a fake clock, observed by a
// metrics reader, a span recorder and a log handler.
type world struct {
	clock   *fakeclock.Clock
	ex      *idem.Executor
	reader  *sdkmetric.ManualReader
	spans   *tracetest.SpanRecorder
	logs    *logRecorder
	metrics *idemotel.Metrics
}

var secret = []byte("support-secret")

func newWorld(t testing.TB) *world {
	t.Helper()
	w := &world{clock: fakeclock.New(), reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder(), logs: &logRecorder{}}
	var err error
	w.metrics, err = idemotel.NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(w.reader)))
	if err != nil {
		t.Fatal(err)
	}
	tracer := idemotel.NewTracer(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(w.spans)), idemotel.WithKeyHash(secret))
	p := idem.PolicyDefault()
	p.InFlightWait = 0
	mem := memstore.New(memstore.Options{Clock: w.clock.Now})
	w.ex, err = idem.New(mem, idem.WithPolicy(p), idem.WithMetrics(w.metrics), idem.WithTracer(tracer),
		idem.WithExecutorLogger(slog.New(w.logs)), idem.WithKeyHashSecret(secret))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// logRecorder is a slog.Handler that keeps every record, at every level.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.records = append(l.records, r.Clone())
	l.mu.Unlock()
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// The identities of the requests: none may appear in an attribute, a label
// or a log line.
const (
	tenant    = "tenant-7f3a"
	principal = "principal-91cc"
	useCase   = "payments.create"
	keyDone   = "key-executed-0000000000000001"
	keyLost   = "key-unknown-00000000000000002"
)

func req(key, body string) idem.Request {
	return idem.Request{Scope: idem.Scope{Tenant: tenant, Principal: principal, UseCase: useCase, Key: key},
		Fingerprint: idem.Fingerprint(sha256.Sum256([]byte(body)))}
}

var created = idem.Response{StatusCode: 201, Body: []byte(`{"paymentId":"p-1"}`)}

// run makes one executed request (1 s on the store's clock), its replay, a
// mismatch on its key, and an unknown (the action fails uncertainly),
// which the reconciler then settles.
func (w *world) run(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	charge := func(context.Context, idem.Attempt) (idem.Response, error) {
		w.clock.Advance(time.Second)
		return created, nil
	}
	if r, err := w.ex.Do(ctx, req(keyDone, "a"), charge); err != nil || r.Kind != idem.ResultExecuted {
		t.Fatalf("executed: %+v %v", r, err)
	}
	if r, err := w.ex.Do(ctx, req(keyDone, "a"), charge); err != nil || r.Kind != idem.ResultReplayed {
		t.Fatalf("replay: %+v %v", r, err)
	}
	if _, err := w.ex.Do(ctx, req(keyDone, "b"), charge); !errors.Is(err, idem.ErrKeyMisuse) {
		t.Fatalf("mismatch: %v", err)
	}
	timeout := func(context.Context, idem.Attempt) (idem.Response, error) {
		return idem.Response{}, errors.New("gateway timeout")
	}
	if _, err := w.ex.Do(ctx, req(keyLost, "c"), timeout); !errors.Is(err, idem.ErrOutcomeUnknown) {
		t.Fatalf("unknown: %v", err)
	}
	w.clock.Advance(time.Hour)
	rc, err := w.ex.Reconciler(func(context.Context, idem.Record) (idem.Finding, error) {
		return idem.Finding{Verdict: idem.VerdictExecuted, Response: created}, nil
	}, idem.WithLogger(slog.New(w.logs)))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := rc.RunOnce(ctx); n != 1 || err != nil {
		t.Fatalf("reconciler settled %d: %v", n, err)
	}
}

// collect reads every metric, by name.
func (w *world) collect(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := w.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	byName := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/idemkit/idem" {
			t.Errorf("instruments from scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			byName[m.Name] = m
		}
	}
	return byName
}

// noIdentity fails if text holds a tenant, principal or key.
func noIdentity(t *testing.T, where, text string) {
	t.Helper()
	for _, id := range []string{tenant, principal, keyDone, keyLost} {
		if strings.Contains(text, id) {
			t.Errorf("%s holds %q: %s", where, id, text)
		}
	}
}
