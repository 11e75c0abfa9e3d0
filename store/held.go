package store

import (
	"context"

	"github.com/idemkit/idem/core"
)

// HeldApplier is an optional fast path for an event about a record the
// caller holds: the Record of the Applied its own earlier event returned
// (the executor holds its attempt's record from the reserve to the
// completion). A store that cannot step and write under one lock (a
// database) can then write the core's step of held at once, under held's
// (version, token) precondition, instead of loading it first.
//
// ApplyHeld must behave exactly as Apply does for held.Scope, whatever held
// is: when the stored record is no longer held (or held is not a record the
// store returned), the precondition fails, nothing is written, and the event
// is applied as Apply would. The store takes Now from its own clock, as in
// Apply, and only writes what core.Step decided for the record it writes
// over. Errors and *out are as for Applier.Apply; out may point at held.
type HeldApplier interface {
	ApplyHeld(ctx context.Context, held *core.Record, ev core.Event, p *core.Policy, out *Applied) error
}

// ApplyHeld applies ev to held.Scope as Apply does, through s's ApplyHeld
// when s is a HeldApplier: the caller vouches that held is the record its
// own earlier event left, and a store may save a load with it. A Wrap of a
// store never shows the inner store's ApplyHeld (a layer that changes what
// the methods do must see every event), so wrappers are served by Apply.
func ApplyHeld(ctx context.Context, s Store, held *core.Record, ev core.Event, p *core.Policy, out *Applied) error {
	h, ok := s.(HeldApplier)
	if !ok {
		return Apply(ctx, s, held.Scope, ev, p, out)
	}
	return applierErr(h.ApplyHeld(ctx, held, ev, p, out), out)
}
