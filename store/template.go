package store

import "github.com/idemkit/idem/core"

// TimeAsValue reports whether the core's step of before by ev uses the
// event's time only as a value, never in a comparison: a reserve of an
// absent record; a complete, fail or mark unknown of a stored one. A
// driver may then send the step as a template whose times are the store's
// clock plus offsets, computed where the write happens (a statement, a
// script), and check the record written against core.Step at that clock:
// the step decides there as it would at any other instant.
func TimeAsValue(ev *core.Event, before *core.Record) bool {
	switch ev.Kind {
	case core.EventReserve:
		return !before.Exists()
	case core.EventComplete, core.EventFail, core.EventMarkUnknown:
		return before.Exists()
	}
	return false
}
