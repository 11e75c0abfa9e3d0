package idemotel_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemotel"
	memstore "github.com/idemkit/idem/store/mem"
)

// BenchmarkDoObserved: Do on the memory store, a replay and a new key,
// bare and with everything observing it (OpenTelemetry's SDK metrics and
// sampled spans, and a logger at INFO that writes nothing on a good
// path), so that a user sees what observability costs per request.
func BenchmarkDoObserved(b *testing.B) {
	metrics, err := idemotel.NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))
	if err != nil {
		b.Fatal(err)
	}
	tracer := idemotel.NewTracer(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(discard{}))))
	observed := []idem.Option{idem.WithMetrics(metrics), idem.WithTracer(tracer), idem.WithExecutorLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
	action := func(context.Context, idem.Attempt) (idem.Response, error) { return created, nil }
	for _, mode := range []struct {
		name string
		opts []idem.Option
	}{{"bare", nil}, {"observed", observed}} {
		ex, err := idem.New(memstore.New(memstore.Options{}), mode.opts...)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.Run("replay/"+mode.name, func(b *testing.B) {
			if _, err := ex.Do(ctx, req(keyDone, "a"), action); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := ex.Do(ctx, req(keyDone, "a"), action); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("new/"+mode.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				if _, err := ex.Do(ctx, req(fmt.Sprintf("bench-key-%016d", i), "a"), action); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// discard is a span exporter that drops what it is given.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
