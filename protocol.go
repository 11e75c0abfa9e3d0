package idem

import "github.com/idemkit/idem/flow"

// The executor's protocol lives in package flow (I/O-free, the standard
// library and the core only, so that the wasm module and any other host
// can carry it); its names are named here too, so that an application
// needs only import idem. They are the same types and values: an error
// from Do matches flow's sentinels and idem's alike.
type (
	Flow       = flow.Flow
	Effect     = flow.Effect
	EffectKind = flow.EffectKind
	Lease      = flow.Lease
	Request    = flow.Request
	Result     = flow.Result
	ResultKind = flow.ResultKind
	Attempt    = flow.Attempt

	Code             = flow.Code
	Error            = flow.Error
	NotExecutedError = flow.NotExecutedError
	KeyMisuseError   = flow.KeyMisuseError
	PanicError       = flow.PanicError

	Counter    = flow.Counter
	Labels     = flow.Labels
	Metrics    = flow.Metrics
	MetricsNop = flow.MetricsNop
	// A Metrics that also implements Distributions gets the histograms.
	Histogram     = flow.Histogram
	Distributions = flow.Distributions
)

// What a Flow asks of its host (Effect.Kind).
const (
	EffectApply  = flow.EffectApply
	EffectRun    = flow.EffectRun
	EffectWait   = flow.EffectWait
	EffectAnswer = flow.EffectAnswer
)

// How a request was answered with a response (Result.Kind).
const (
	ResultExecuted = flow.ResultExecuted
	ResultReplayed = flow.ResultReplayed
)

// The error codes (see flow's for what each means and its HTTP status).
const (
	CodeInProgress       = flow.CodeInProgress
	CodeInvalidKey       = flow.CodeInvalidKey
	CodeInvalidRequest   = flow.CodeInvalidRequest
	CodeKeyMisuse        = flow.CodeKeyMisuse
	CodeNotExecuted      = flow.CodeNotExecuted
	CodeOutcomeUnknown   = flow.CodeOutcomeUnknown
	CodeResponseInvalid  = flow.CodeResponseInvalid
	CodeStoreRejected    = flow.CodeStoreRejected
	CodeStoreUnavailable = flow.CodeStoreUnavailable
)

// The sentinels: match an error with errors.Is against them.
var (
	ErrInvalidKey       = flow.ErrInvalidKey
	ErrInvalidRequest   = flow.ErrInvalidRequest
	ErrKeyMisuse        = flow.ErrKeyMisuse
	ErrInProgress       = flow.ErrInProgress
	ErrOutcomeUnknown   = flow.ErrOutcomeUnknown
	ErrNotExecuted      = flow.ErrNotExecuted
	ErrStoreUnavailable = flow.ErrStoreUnavailable
	ErrStoreRejected    = flow.ErrStoreRejected
	ErrResponseInvalid  = flow.ErrResponseInvalid
)

// ErrLeaseLost is the cause of an action's cancelled context when its
// attempt lost the lease (flow.ErrLeaseLost).
var ErrLeaseLost = flow.ErrLeaseLost

// The counters of SPEC §7.
const (
	CounterReserveCreated     = flow.CounterReserveCreated
	CounterReserveReplay      = flow.CounterReserveReplay
	CounterReserveInProgress  = flow.CounterReserveInProgress
	CounterReserveKeyMisuse   = flow.CounterReserveKeyMisuse
	CounterReserveFailedRetry = flow.CounterReserveFailedRetry
	CounterReserveUnknown     = flow.CounterReserveUnknown
	CounterStoreError         = flow.CounterStoreError
	CounterZombieKey          = flow.CounterZombieKey
	CounterTTLPruned          = flow.CounterTTLPruned
	CounterReconcileScheduled = flow.CounterReconcileScheduled
	CounterReconcileResolved  = flow.CounterReconcileResolved
	CounterReconcileFailed    = flow.CounterReconcileFailed
	CounterWorkerError        = flow.CounterWorkerError
	CounterStoreRejected      = flow.CounterStoreRejected
)

// The histograms beside them (see flow.Histogram for what each measures).
const (
	HistogramAttemptDuration   = flow.HistogramAttemptDuration
	HistogramInFlightWait      = flow.HistogramInFlightWait
	HistogramReconcileDuration = flow.HistogramReconcileDuration
	HistogramResponseSize      = flow.HistogramResponseSize
)

// NotExecuted wraps err to say the action definitely did nothing: the key
// is released for a retry (flow.NotExecuted).
func NotExecuted(err error) error { return flow.NotExecuted(err) }

// Counters lists every counter, in a stable order.
func Counters() []Counter { return flow.Counters() }

// Histograms lists every histogram, in a stable order.
func Histograms() []Histogram { return flow.Histograms() }
