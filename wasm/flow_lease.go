package wasmcore

import (
	"context"
	"errors"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/flow"
	"github.com/idemkit/idem/store"
	"github.com/idemkit/idem/wasm/internal/abi"
)

// Lease is a running attempt's lease kept in the module, with
// flow.Lease's calls (see there): the module decides; the host keeps the
// timers. If the module fails, the lease is taken as lost, so that the
// action stops.
type Lease struct {
	f        *Flow
	token    core.Token
	interval time.Duration
	tellBy   time.Time
	failed   error // the module's failure, once it failed
}

// Lease starts the lease of the attempt Next's EffectRun runs, granted by
// the reserve the host sent at sent (on its own clock), as flow.Flow.Lease.
func (f *Flow) Lease(sent time.Time) Lease {
	l := Lease{f: f}
	l.state(abi.AppendLease(nil, f.handle, sent))
	return l
}

// Event is the heartbeat: the event that extends the lease.
func (l *Lease) Event() core.Event { return core.Event{Kind: core.EventHeartbeat, Token: l.token} }

// Interval is how long after the action starts the first heartbeat is due.
func (l *Lease) Interval() time.Duration { return l.interval }

// TellBy is when, at the latest, the action must be told its lease is lost.
func (l *Lease) TellBy() time.Time { return l.tellBy }

// Beaten reports how a heartbeat went and says when the next is due, as
// flow.Lease.Beaten.
func (l *Lease) Beaten(sent, now time.Time, a *store.Applied, err error) (next time.Duration) {
	return l.state(abi.AppendBeaten(nil, l.f.handle, sent, now, a, err))
}

// Lost reports whether the action must be told now that its lease is
// lost, and the cause, as flow.Lease.Lost.
func (l *Lease) Lost(now time.Time) (cause error, lost bool) {
	answer, err := l.exchange(abi.AppendLost(nil, l.f.handle, now))
	if err == nil {
		cause, lost, err = abi.DecodeLost(answer)
	}
	if err != nil {
		l.failed = err
		return err, true
	}
	return cause, lost
}

// BeatTimeout bounds the store call of a heartbeat sent at now, as
// flow.Lease.BeatTimeout.
func (l *Lease) BeatTimeout(now time.Time) time.Duration {
	answer, err := l.exchange(abi.AppendBeatTimeout(nil, l.f.handle, now))
	var d time.Duration
	if err == nil {
		d, err = abi.DecodeDuration(answer)
	}
	if err != nil {
		l.failed = err
		return time.Millisecond
	}
	return d
}

// state sends a call answered with the lease's state and keeps it; it
// returns when the next heartbeat is due (0 when the module failed: no
// more).
func (l *Lease) state(call []byte) time.Duration {
	answer, err := l.exchange(call)
	var next time.Duration
	if err == nil {
		next, l.token, l.interval, l.tellBy, err = abi.DecodeLeaseState(answer)
	}
	if err != nil {
		l.failed = err
		return 0
	}
	return next
}

// exchange sends call to the module on the flow's instance.
func (l *Lease) exchange(call []byte) ([]byte, error) {
	f := l.f
	if l.failed != nil {
		return nil, l.failed
	}
	if f.inst == nil {
		return nil, errFlowEnded
	}
	f.h.mu.RLock()
	defer f.h.mu.RUnlock()
	if f.h.closed {
		return nil, ErrClosed
	}
	f.inst.request = append(f.inst.request[:0], call...)
	answer, err := f.inst.exchange(context.Background(), f.inst.flowFunc, abi.ExportFlow)
	if errors.Is(err, ErrTrap) {
		f.release(context.Background(), err) // the instance is not reused, and the flow ends
	}
	return answer, err
}

// errFlowEnded: a lease call after its flow's module failed or the flow
// was closed. The lease counts as lost.
var errFlowEnded = errors.Join(flow.ErrLeaseLost, errors.New("idem/wasm: the flow ended"))
