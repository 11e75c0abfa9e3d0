package idemotel_test

import (
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

type recorder struct {
	spans    *tracetest.SpanRecorder
	provider *sdktrace.TracerProvider
}

func newRecorder() recorder {
	r := tracetest.NewSpanRecorder()
	return recorder{spans: r, provider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r))}
}
