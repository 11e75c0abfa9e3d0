package flow

import (
	"errors"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// ErrLeaseLost is the cause (context.Cause) of an action's cancelled
// context when its attempt lost the lease: a heartbeat found the record
// taken over (the sweeper marked it unknown, the reconciler settled it), or
// no heartbeat extended it before it ended. The action should stop: another
// attempt may run the key as soon as the reconciler proves this one did
// nothing.
var ErrLeaseLost = errors.New("idem: the attempt's lease was lost")

// leaseMargin is how long before the end of its lease, as the host last
// knew it, an attempt is told it lost the lease when no heartbeat extended
// it: a twentieth of the lease, at most a second. The end is already
// reckoned from when the call that granted it was sent (the store read its
// clock after that); the margin covers what the host's timers and
// scheduler add.
func leaseMargin(lease time.Duration) time.Duration { return min(lease/20, time.Second) }

// Lease is a running attempt's lease as the host of its action keeps it:
// when to extend it (Event, every Interval), how long one extension may
// take (BeatTimeout), and when the action must be told that the lease is
// lost (TellBy, Lost), whatever the store does. It is the part of a Flow
// that runs beside the action, apart from the Flow so that a host may beat
// from another goroutine while the action runs. It reads no clock: every
// time is the host's, passed in, so that a host on virtual time (the
// simulator) keeps the lease exactly as Do does.
type Lease struct {
	scope    Scope
	token    Token
	metrics  Metrics
	interval time.Duration
	margin   time.Duration
	// end is when the lease ends on the host's clock: the store's lease
	// end less the store's time at the call that granted or extended it,
	// from when that call was sent.
	end     time.Time
	lastErr error // the last beat's store error, for the cause
	lost    bool  // a beat found the lease lost for good
}

// Lease starts the lease of the attempt that Next's EffectRun runs, granted
// by the reserve the host sent at sent (on its own clock).
func (f *Flow) Lease(sent time.Time) Lease {
	at := &f.eff.Attempt
	return Lease{scope: at.Scope, token: at.Token, metrics: f.cfg.Metrics, interval: f.cfg.HeartbeatInterval,
		margin: leaseMargin(f.cfg.Policy.LeaseDuration), end: sent.Add(at.leaseLeft)}
}

// Event is the heartbeat: the event that extends the lease.
func (l *Lease) Event() core.Event { return core.Event{Kind: core.EventHeartbeat, Token: l.token} }

// Interval is how long after the action starts the first heartbeat is due.
func (l *Lease) Interval() time.Duration { return l.interval }

// TellBy is when, at the latest, the action must be told that the lease is
// lost unless a heartbeat extends it first: its end less a margin.
func (l *Lease) TellBy() time.Time { return l.end.Add(-l.margin) }

// Lost reports whether the action must be told now that its lease is lost,
// and the cause to cancel its context with (ErrLeaseLost, joined with the
// last heartbeat's store error if any).
func (l *Lease) Lost(now time.Time) (cause error, lost bool) {
	switch {
	case l.lost:
		return ErrLeaseLost, true
	case now.Before(l.TellBy()):
		return nil, false
	}
	return errors.Join(ErrLeaseLost, l.lastErr), true
}

// BeatTimeout bounds the store call of a heartbeat sent at now: no beat
// outlives the lease it is trying to extend (by then the action has been
// told), nor the interval (a hung beat must not hold back the next).
func (l *Lease) BeatTimeout(now time.Time) time.Duration {
	return min(l.interval, max(l.TellBy().Sub(now), time.Millisecond))
}

// Beaten reports how a heartbeat sent at sent went, heard at now, and
// says how long from now the next one is due. A store error leaves the
// lease as it was (the next beat, sooner than an interval, may extend it);
// any answer but Extended (stale, or no longer in progress) loses it for
// good: Lost then says so at once, and no more beats are due.
func (l *Lease) Beaten(sent, now time.Time, a *store.Applied, err error) (next time.Duration) {
	Count(l.metrics, l.scope.UseCase, core.EventHeartbeat, a, err)
	switch {
	case err != nil:
		l.lastErr = err
		return min(l.interval, max(l.TellBy().Sub(now)/2, time.Millisecond))
	case a.Transition.Decision.Kind != core.DecisionExtended:
		l.lost = true
		return 0
	}
	l.end, l.lastErr = sent.Add(a.Record.LockedUntil.Sub(a.Now)), nil
	return l.interval
}
