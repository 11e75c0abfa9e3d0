package store

import (
	"context"

	"github.com/idemkit/idem/core"
)

// ApplyFunc is the signature of Applier.Apply.
type ApplyFunc func(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *Applied) error

// Layer describes a Store built over another: a recorder, a fault injector,
// a view that changes what Load shows. Wrap turns it into a Store.
type Layer struct {
	// Outer provides the layer's own Store methods.
	Outer Store
	// Inner is the store the layer wraps.
	Inner Store
	// Apply says how the layer treats Inner's fast path (Applier). Nil hides
	// it: callers then take the load-step-write path through Outer's
	// methods, which is what a layer that changes what those methods do
	// needs (otherwise its changes are bypassed). PassApply shows Inner's
	// Apply as it is. Any other function wraps it: it gets Inner's Apply as
	// next and returns the layer's.
	Apply func(next ApplyFunc) ApplyFunc
}

// PassApply is a Layer.Apply that shows the inner store's fast path as it
// is: for a layer that only watches (counts calls, say) and changes nothing.
func PassApply(next ApplyFunc) ApplyFunc { return next }

// Wrap returns the Store that l describes. It is an Applier exactly when
// l.Inner is one and l.Apply is not nil: the one place where a wrapper's
// fast path is decided, so that no wrapper has to decide it by hand.
func Wrap(l Layer) Store {
	a, ok := l.Inner.(Applier)
	if !ok || l.Apply == nil {
		return layered{l.Outer, l.Inner}
	}
	return layeredApplier{layered{l.Outer, l.Inner}, l.Apply(a.Apply)}
}

// HideApplier returns s without its fast path, so that every event goes
// through Load and compare-and-set.
func HideApplier(s Store) Store { return Wrap(Layer{Outer: s, Inner: s}) }

// Unwrap returns the store a Wrap result was built over, or nil for a store
// that Wrap did not build.
func Unwrap(s Store) Store {
	switch l := s.(type) {
	case layered:
		return l.inner
	case layeredApplier:
		return l.inner
	}
	return nil
}

type layered struct {
	Store       // Outer
	inner Store // for Unwrap
}

type layeredApplier struct {
	layered
	apply ApplyFunc
}

func (l layeredApplier) Apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *Applied) error {
	return l.apply(ctx, scope, ev, p, out)
}

// Stepper is an optional interface of a Store that may run another build of
// the core than the one linked in (the core compiled to wasm, say). Apply
// and Op step every event through the StepFunc found on s or the stores it
// wraps (Unwrap); nil, or no Stepper, is the linked core.Step. It changes
// no decision: every build of the core decides alike.
type Stepper interface {
	StepFunc() core.StepFunc
}

// stepOf is the step function of s: the first Stepper's found down the
// stores it wraps, or nil for core.Step.
func stepOf(s Store) core.StepFunc {
	for s != nil {
		if st, ok := s.(Stepper); ok {
			return st.StepFunc()
		}
		s = Unwrap(s)
	}
	return nil
}
