package refmodel

import (
	"time"

	"github.com/idemkit/idem/core"
)

// Outcome is what the table makes of one event on one record.
type Outcome struct {
	// Refusal says why the core must refuse the event: it answers an error
	// and changes nothing. When it is set, the rest is the zero decision,
	// no write and the record as it was.
	Refusal  string
	Decision core.Decision
	Write    core.Write
	// Record is the record after the event: the one given when nothing is
	// written, Record{Scope} (absent) after a delete.
	Record core.Record
}

// Step fills out with what the table of SPEC §5 says ev does to rec under
// p. It changes none of rec, ev and p and keeps none of them; the record
// it leaves shares rec's or ev's response slices, which it never writes
// to. It fills the caller's outcome rather than returning one because an
// outcome holds a whole record, and the simulator steps the model on
// every store write.
func Step(out *Outcome, rec *core.Record, ev *core.Event, p *core.Policy) {
	*out = Outcome{Record: *rec}
	c := change{Outcome: out, was: rec, ev: *ev, p: p,
		now: ev.Now.Round(0)} // records outlive processes: wall-clock time only
	if why := refusal(ev); why != "" {
		c.refuse(why)
		return
	}
	switch ev.Kind {
	case core.EventReserve:
		c.reserve()
	case core.EventComplete, core.EventFail, core.EventMarkUnknown, core.EventHeartbeat:
		c.owner()
	case core.EventResolve:
		c.resolve()
	case core.EventSweep:
		c.sweep()
	case core.EventEvict:
		c.evict()
	}
}

// refusal is why ev cannot be applied to any record, "" when it can: the
// table reads a time on every event, a token on every event but a sweep
// (a reserve's is the fresh one the store handed out), a fingerprint on a
// reserve, and a verdict on a resolve.
func refusal(ev *core.Event) string {
	switch {
	case ev.Kind == core.EventInvalid || ev.Kind > core.EventEvict:
		return "unknown event"
	case ev.Now.IsZero():
		return "no time"
	case ev.Kind != core.EventSweep && ev.Token == 0:
		return "no token"
	case ev.Kind == core.EventReserve && ev.Fingerprint == core.Fingerprint{}:
		return "no fingerprint"
	case ev.Kind == core.EventResolve && (ev.Verdict == core.VerdictInvalid || ev.Verdict > core.VerdictStillUnknown):
		return "unknown verdict"
	}
	return ""
}

// change is one Step under way: the outcome so far, and what it is about.
// It holds a copy of the event, not the caller's: the rows store what it
// carries into the outcome, which would make the caller's event escape to
// the heap (an allocation on every store write the simulator checks).
type change struct {
	*Outcome
	was *core.Record
	ev  core.Event
	p   *core.Policy
	now time.Time
}

func (c *change) refuse(why string) {
	*c.Outcome = Outcome{Refusal: why, Record: *c.was}
}

// answer decides k and writes nothing (yet).
func (c *change) answer(k core.DecisionKind) { c.Decision = core.Decision{Kind: k} }

// answerAfter decides k, telling the caller to come back after d.
func (c *change) answerAfter(k core.DecisionKind, d time.Duration) {
	c.Decision = core.Decision{Kind: k, RetryAfter: d}
}

// update writes the record as changed over the one the event found: its
// version bumped by one, on the precondition of the found version and token.
func (c *change) update() {
	c.Write = core.Write{Kind: core.WriteUpdate, ExpectVersion: c.was.Version, ExpectToken: c.was.Token}
	c.Record.Version = c.was.Version + 1
}

// remove deletes the record the event found.
func (c *change) remove() {
	c.Write = core.Write{Kind: core.WriteDelete, ExpectVersion: c.was.Version, ExpectToken: c.was.Token}
	c.Record = core.Record{Scope: c.was.Scope}
}

// exists reports whether the event found a record.
func (c *change) exists() bool { return c.was.Status != core.StatusAbsent }

// owned reports whether the event's token owns the record it found.
func (c *change) owned() bool { return c.exists() && c.was.Token == c.ev.Token }

// leaseEnd is when a lease taken or extended now runs out.
func (c *change) leaseEnd() time.Time { return c.now.Add(c.p.LeaseDuration) }

// due reports whether the deadline t has come: every deadline of the
// table (a lease's end, an expiry, a tombstone's retention) is over at
// exactly its instant.
func (c *change) due(t time.Time) bool { return !c.now.Before(t) }
