// Package idemotel exports what idem observes to OpenTelemetry: its
// counters and histograms as instruments of a meter provider (Metrics,
// given to idem.WithMetrics), and one span per Executor.Do from a tracer
// provider (Tracer, given to idem.WithTracer).
//
// It is the one package of idem that imports OpenTelemetry: the core, the
// executor and the stores do not, and an application that does not import
// this package does not link it.
//
// # What is never exported
//
// Attributes are bounded: the use case (a name in the application's code),
// the event and the core's decision, and for a span how Do answered, the
// attempt's fencing token and whether its outcome was recorded. The key,
// the tenant and the principal never are: they are unbounded and may be
// personal data. A Tracer given WithKeyHash adds idem.KeyHash of the scope
// under a secret, so that a support engineer who holds the secret can
// find one client's request.
//
// # Instruments
//
// Every counter of SPEC §7 under its name (idem.Counter.Name), unit
// {event}, and the histograms of idem.Histogram: attempt.duration,
// in_flight_wait.duration and reconcile.duration in seconds, and
// response.size in bytes, with bucket boundaries fit for each.
package idemotel
