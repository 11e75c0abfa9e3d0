package sim

import (
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// An attempt that loses its lease is told at once (SPEC §5 Heartbeat): once
// a heartbeat of its own found the record taken over or no longer in
// progress, the attempt does nothing more as an owner that needs the lease
// — no heartbeat and no gateway call. The checker judges it by what the
// attempt does next, from the heartbeat answers it saw.

// beaten hears the store's answer to a heartbeat of attempt token.
func (c *checker) beaten(scope int32, token core.Token, a *store.Applied, err error) {
	if err != nil {
		return // a store error says nothing about the lease
	}
	switch a.Transition.Decision.Kind {
	case core.DecisionConflict, core.DecisionStale:
		if c.leaseLost == nil {
			c.leaseLost = make(map[attemptID]core.DecisionKind)
		}
		c.leaseLost[attemptID{scope, token}] = a.Transition.Decision.Kind
	}
}

// acts hears attempt token start something only the lease holder may do:
// a heartbeat or a gateway call.
func (c *checker) acts(scope int32, token core.Token, what string) {
	if d, lost := c.leaseLost[attemptID{scope, token}]; lost {
		c.fail(4, scope, "attempt %d made a %s after a heartbeat answered %v: it no longer holds the lease", token, what, d)
	}
}
