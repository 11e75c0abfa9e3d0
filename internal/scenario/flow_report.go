package scenario

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/flow"
	"github.com/idemkit/idem/store"
)

// report performs what a command names for h's Flow (its apply, the
// action's return, the end of a wait, the caller going away, a heartbeat,
// a look at the lease), reports it to the Flow the way Do does, and says
// what happened and what the Flow asks next. A report the Flow does not
// expect is made anyway: the Flow's answer to a host out of step is part
// of the protocol.
func (s *Flows) report(a args, h *hosted) string {
	switch a.d.Cmd {
	case "apply":
		out := s.apply(a, h)
		return out + "\n" + DescribeEffect(h.f)
	case "run":
		a.only("flow", "at", "status", "body", "error", "code", "panic")
		resp, err := actionReturn(a)
		h.f.Ran(resp, err)
	case "waited":
		a.only("flow", "at", "elapsed")
		h.f.Waited(a.duration("elapsed"))
	case "gone":
		a.only("flow", "at")
		h.f.Gone(context.Canceled)
	case "beat":
		return s.beat(a, h)
	case "lease":
		a.only("flow", "at")
		cause, lost := h.lease.Lost(s.now)
		if lost {
			return fmt.Sprintf("lease: tell_by=%s lost (%v)", stamp(h.lease.TellBy()), cause)
		}
		return fmt.Sprintf("lease: tell_by=%s held", stamp(h.lease.TellBy()))
	}
	return DescribeEffect(h.f)
}

// apply performs h's EffectApply on the store, as Do does (through
// store.ApplyHeld for an event of the attempt's own record), or fails it:
// error= is the failure the host hears, and with written the write was
// made all the same (an ambiguous commit).
func (s *Flows) apply(a args, h *hosted) string {
	a.only("flow", "at", "error", "written")
	e := h.f.Next()
	if e.Kind != flow.EffectApply {
		a.d.Fatalf(a.t, "apply: the flow asks for %s, not an apply", e.Kind)
	}
	failure := storeFailure(a)
	h.sent = s.now
	var out string
	var err error
	if failure == nil || a.has("written") {
		ctx := context.Background()
		if e.Held != nil {
			err = store.ApplyHeld(ctx, s.st, e.Held, e.Event, &s.policy, &h.applied)
		} else {
			err = store.Apply(ctx, s.st, h.scope, e.Event, &s.policy, &h.applied)
		}
		out = DescribeApplied(&h.applied)
		if err != nil {
			out = "error: " + err.Error()
		}
	}
	if failure != nil {
		if out != "" {
			out = "written: " + out + "\n"
		}
		out += "heard: " + failure.Error()
		h.applied, err = store.Applied{}, failure
	}
	h.f.Applied(&h.applied, err)
	if h.f.Next().Kind == flow.EffectRun {
		h.lease = s.build.Lease(h.f, h.sent) // Do starts the lease as the action starts
	}
	return out
}

// errStoreDown is the failure of a store that does not answer.
var errStoreDown = errors.New("connection refused")

// storeCause is the cause of the store failure a command's error= names
// (unavailable, rejected, timeout), or nil: the one list of the failures
// Flow and Op scenarios inject.
func storeCause(a args) error {
	return []error{nil, errStoreDown, store.ErrRejected, context.DeadlineExceeded}[a.choice("error", 0, "", "unavailable", "rejected", "timeout")]
}

// storeFailure is that failure as a driver reports it to Apply's caller (a
// *store.Error), or nil.
func storeFailure(a args) error {
	if cause := storeCause(a); cause != nil {
		return &store.Error{Method: store.MethodApply, Err: cause}
	}
	return nil
}

// actionReturn is what a run command says the action returned: a response
// (status=, body=), or error= (not_executed with code=, failed, deadline,
// canceled), or panic=.
func actionReturn(a args) (core.Response, error) {
	if a.has("panic") {
		return core.Response{}, &flow.PanicError{Value: a.text("panic")}
	}
	switch a.choice("error", 0, "", "not_executed", "failed", "deadline", "canceled") {
	case 1:
		return core.Response{}, &flow.NotExecutedError{Err: errors.New("declined before sending"), Code: core.ErrorCode(a.text("code"))}
	case 2:
		return core.Response{}, errors.New("gateway: connection reset")
	case 3:
		return core.Response{}, context.DeadlineExceeded
	case 4:
		return core.Response{}, context.Canceled
	}
	if !a.has("status") {
		a.d.Fatalf(a.t, "run: say what the action returned (status=, error= or panic=)")
	}
	return core.Response{StatusCode: int(a.uint("status")), Body: []byte(a.text("body"))}, nil
}

// beat sends h's heartbeat at the store's clock (at=), as Do's heart does,
// and reports it to the lease: error= fails it.
func (s *Flows) beat(a args, h *hosted) string {
	a.only("flow", "at", "error")
	var applied store.Applied
	var out string
	err := storeFailure(a)
	switch {
	case err != nil:
		out = "heard: " + err.Error()
	default:
		if err = store.Apply(context.Background(), s.st, h.scope, h.lease.Event(), &s.policy, &applied); err != nil {
			out = "error: " + err.Error()
		} else {
			out = DescribeApplied(&applied)
		}
	}
	next := h.lease.Beaten(s.now, s.now, &applied, err)
	if next <= 0 {
		return out + "\nno more beats"
	}
	return fmt.Sprintf("%s\nnext beat in %v", out, next)
}
