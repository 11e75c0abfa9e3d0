package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemotel"
)

// telemetry is what the example exports when asked, and nothing by
// default: metrics to Prometheus on -metrics-addr (a port of its own, so
// that the API's port does not publish them), traces over OTLP/HTTP to
// -otlp-endpoint. The executor logs through the app's logger either way.
type telemetry struct {
	options  []idem.Option // for idem.New
	metrics  http.Handler  // /metrics, or nil
	shutdown []func(context.Context) error
}

func newTelemetry(ctx context.Context, o options, logger *slog.Logger) (*telemetry, error) {
	t := &telemetry{options: []idem.Option{idem.WithExecutorLogger(logger)}}
	if o.metricsAddr != "" {
		// A registry of its own: the process's default one is any
		// library's, and two apps in one process (the tests) must not meet.
		registry := prometheus.NewRegistry()
		exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
		if err != nil {
			return nil, fmt.Errorf("-metrics-addr: %w", err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
		m, err := idemotel.NewMetrics(mp)
		if err != nil {
			return nil, err
		}
		t.options = append(t.options, idem.WithMetrics(m))
		t.metrics = promhttp.HandlerFor(registry, promhttp.HandlerOpts{})
		t.shutdown = append(t.shutdown, mp.Shutdown)
	}
	if o.otlpEndpoint != "" {
		endpoint, err := tracesURL(o.otlpEndpoint)
		if err != nil {
			return nil, err
		}
		exporter, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
		if err != nil {
			return nil, fmt.Errorf("-otlp-endpoint: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
		t.options = append(t.options, idem.WithTracer(idemotel.NewTracer(tp)))
		t.shutdown = append(t.shutdown, tp.Shutdown)
	}
	return t, nil
}

// close flushes and stops the exporters.
func (t *telemetry) close(ctx context.Context) error {
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// serveMetrics serves a.metrics at /metrics on addr, if both are set,
// until the returned stop is called.
func (a *app) serveMetrics(addr string, logger *slog.Logger) (stop func(), err error) {
	if addr == "" || a.metrics == nil {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metrics)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	logger.Info("payments: metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return func() { _ = srv.Close() }, nil
}

// tracesURL is the collector's traces URL: endpoint as given, or with
// OTLP's /v1/traces when it names no path (a collector's base URL, as
// OTEL_EXPORTER_OTLP_ENDPOINT does).
func tracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("-otlp-endpoint %q: want an http or https URL", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}
