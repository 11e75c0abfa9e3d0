//go:build wasip1 && perturb

package main

import "github.com/idemkit/idem/core"

// perturb, built only with -tags perturb, makes the guest wrong on purpose,
// so that a test can show the differential tests catch a guest that drifts
// from the native core (wasm/perturb_test.go). It changes one decision: an
// InFlight answer to Reserve comes back as Reconciling, with the same
// Retry-After and no write, which a client could not tell from a right
// answer by its shape alone.
//
// It also turns an event of kind 200 (which the native core refuses with
// ErrUnknownEvent) into a panic, so that the host's trap handling can be
// tested against a real trap of a real module.
func perturb(res *core.Transition, ev *core.Event) {
	if res.Decision.Kind == core.DecisionInFlight {
		res.Decision.Kind = core.DecisionReconciling
	}
}

func trap(ev *core.Event) {
	if ev.Kind == 200 {
		panic("perturb: a deliberate trap")
	}
}
