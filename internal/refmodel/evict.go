package refmodel

import "github.com/idemkit/idem/core"

// evict is an operator's removal of a record by hand: only of one whose
// outcome is known (completed, failed_retryable) or of a tombstone, and
// only with the token the record holds. A record in progress or unknown
// stays: its side effect may happen, or may have happened, and freeing its
// key would let a retry execute it again.
func (c *change) evict() {
	switch c.was.Status {
	case core.StatusInProgress, core.StatusUnknown, core.StatusAbsent:
		c.answer(core.DecisionNotApplicable)
	default:
		if !c.owned() {
			c.answer(core.DecisionStale)
			return
		}
		c.remove()
		c.answer(core.DecisionEvicted)
	}
}
