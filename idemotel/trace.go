package idemotel

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/idem"
)

// The attributes of a Do's span, beside idem.use_case.
const (
	attrAnswer   = attribute.Key("idem.answer")   // how Do answered (idem.Answer)
	attrToken    = attribute.Key("idem.token")    // the attempt's fencing token, in decimal
	attrRecorded = attribute.Key("idem.recorded") // whether the attempt this Do ran had its outcome recorded
	attrKeyHash  = attribute.Key("idem.key_hash") // idem.KeyHash, only WithKeyHash
	attrElapsed  = attribute.Key("idem.elapsed_ms")
)

// SpanName is the name of every Do's span: one name, whatever the use case
// (an attribute), as span names must stay few.
const SpanName = "idem.Do"

// Tracer starts one span per Do from a tracer provider: give it to
// idem.WithTracer. The action runs on the span's context, so its own
// spans are children of it.
type Tracer struct {
	tracer        trace.Tracer
	keyHashSecret []byte
}

// TracerOption configures a Tracer.
type TracerOption func(*Tracer)

// WithKeyHash adds idem.KeyHash of each request's scope under secret to its
// span (idem.key_hash). Without it, nothing of the key, tenant or
// principal is in a span.
func WithKeyHash(secret []byte) TracerOption {
	return func(t *Tracer) { t.keyHashSecret = append([]byte(nil), secret...) }
}

// NewTracer makes a Tracer over tp's tracer for idem.
func NewTracer(tp trace.TracerProvider, opts ...TracerOption) *Tracer {
	t := &Tracer{tracer: tp.Tracer(instrumentationName)}
	for _, o := range opts {
		o(t)
	}
	return t
}

// StartDo starts the span of one Do.
func (t *Tracer) StartDo(ctx context.Context, scope idem.Scope) (context.Context, idem.Span) {
	attrs := make([]attribute.KeyValue, 0, 2)
	attrs = append(attrs, attrUseCase.String(scope.UseCase))
	if t.keyHashSecret != nil {
		attrs = append(attrs, attrKeyHash.String(idem.KeyHash(t.keyHashSecret, scope)))
	}
	ctx, span := t.tracer.Start(ctx, SpanName, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, doSpan{span}
}

type doSpan struct{ span trace.Span }

// StoreCall adds the call as an event named idem.store.<method>.
func (s doSpan) StoreCall(c idem.StoreCall) {
	if !s.span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	if c.Event != 0 {
		attrs = append(attrs, attrEvent.String(c.Event.String()))
	}
	if c.Err == nil && c.Decision != 0 {
		attrs = append(attrs, attrDecision.String(c.Decision.String()))
	}
	attrs = append(attrs, attrElapsed.Float64(float64(c.Elapsed.Microseconds())/1000))
	if c.Err != nil {
		attrs = append(attrs, attribute.String("exception.message", c.Err.Error()))
	}
	s.span.AddEvent("idem.store."+c.Method.String(), trace.WithAttributes(attrs...))
}

// End sets how Do answered and ends the span. An answer that says the
// service failed (the store, the response, an outcome left unknown) sets
// the span's status to Error; a client's mistake or a key in flight does
// not, as they are answers working as designed.
func (s doSpan) End(a idem.Answered) {
	attrs := []attribute.KeyValue{attrAnswer.String(a.Answer)}
	if a.Token != 0 {
		attrs = append(attrs, attrToken.String(strconv.FormatUint(uint64(a.Token), 10)))
	}
	if a.Ran {
		attrs = append(attrs, attrRecorded.Bool(a.Recorded))
	}
	s.span.SetAttributes(attrs...)
	if a.Err != nil && serverFailure(a.Answer) {
		s.span.RecordError(a.Err)
		s.span.SetStatus(codes.Error, a.Answer)
	}
	s.span.End()
}

// serverFailure reports whether an answer is the service's failure.
func serverFailure(answer string) bool {
	switch idem.Code(answer) {
	case idem.CodeStoreUnavailable, idem.CodeStoreRejected, idem.CodeResponseInvalid, idem.CodeOutcomeUnknown:
		return true
	}
	return answer == "error"
}
