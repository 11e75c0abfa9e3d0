package flow

import (
	"errors"
	"time"
)

// Config is what every Flow of one executor shares: the lifecycle policy,
// where the counters go, and the two durations a host's I/O is bounded by.
// A host fills it once (Fill) and starts each request's Flow from it
// (Begin, BeginIn); it must not change while a Flow runs.
type Config struct {
	Policy Policy
	// Metrics receives the counters of every event a Flow, its Lease or an
	// Attempt's CompleteIn is told about (nil: MetricsNop).
	Metrics Metrics
	// OutcomeTimeout bounds the write of an action's outcome
	// (Effect.Timeout), which runs detached from the caller (0: 10 s).
	OutcomeTimeout time.Duration
	// HeartbeatInterval is how often a running action's lease is extended
	// (Lease.Interval; 0: a third of the lease).
	HeartbeatInterval time.Duration
}

// OutcomeTimeoutDefault is Config.OutcomeTimeout's default.
const OutcomeTimeoutDefault = 10 * time.Second

// Fill sets c's zero fields to their defaults, then refuses a Config no
// Flow can run under: an invalid policy (its own error), or a duration
// that is not positive.
func (c *Config) Fill() error {
	if err := c.Policy.Validate(); err != nil {
		return err
	}
	if c.Metrics == nil {
		c.Metrics = MetricsNop{}
	}
	if c.OutcomeTimeout == 0 {
		c.OutcomeTimeout = OutcomeTimeoutDefault
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = c.Policy.LeaseDuration / 3
	}
	if c.HeartbeatInterval <= 0 || c.OutcomeTimeout <= 0 {
		return errors.New("idem: heartbeat interval " + c.HeartbeatInterval.String() + " and outcome timeout " + c.OutcomeTimeout.String() + " must be positive")
	}
	return nil
}
