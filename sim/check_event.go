package sim

import (
	"time"

	"github.com/idemkit/idem/core"
)

// eventOf is the event of kind behind a store call by m on scope, as the
// lifecycle checker can know it, for the reference model to step from
// prev (the shadow) at the store's time now: the event itself on the fast
// path (known; a reserve's fresh token is the store's, read off the record
// it left, after). On the load-then-write path it is rebuilt from the
// caller: the kind, the attempt's own token (a server's owner events), the
// finding of the reconciler's Check. What a rebuilt event cannot know is
// what the table copies into the record as it is (a new attempt's
// fingerprint, a completion's response, an error code): it is read off
// the record written, and so checked on the fast path only.
//
// A Resolve is held to what its Check found, whatever the event says: the
// reconciler must record the finding about the attempt it examined.
func eventOf(m *opMeta, scope int32, kind core.EventKind, known *core.Event, now time.Time, prev, after *core.Record) core.Event {
	var ev core.Event
	if known != nil {
		ev = *known
	} else {
		ev = core.Event{Kind: kind, Fingerprint: after.Fingerprint, Response: after.Response, ErrorCode: after.LastErrorCode, Verdict: verdictOf(after)}
		if m.ownToken() && kind != core.EventReserve {
			ev.Token = m.attempt
		}
	}
	ev.Now = now
	if f := m.finding; kind == core.EventResolve && f != nil && f.set && f.scope == scope {
		ev.Verdict, ev.Token, ev.Response = f.verdict, f.token, f.response
	}
	switch {
	case ev.Token != 0:
	case kind == core.EventReserve:
		ev.Token = freshToken(prev, after)
	default:
		ev.Token = prev.Token // not known: taken for the record's owner
	}
	return ev
}

// freshToken is the fresh token a reserve was handed by the store: the one
// on the record it left if that is another attempt's than prev's, else
// (it started no attempt) any token above prev's.
func freshToken(prev, after *core.Record) core.Token {
	if after.Token != 0 && after.Token != prev.Token {
		return after.Token
	}
	return prev.Token + 1
}

// verdictOf is the finding a Resolve must have carried to leave after.
func verdictOf(after *core.Record) core.Verdict {
	switch after.Status {
	case core.StatusCompleted:
		return core.VerdictExecuted
	case core.StatusFailedRetryable:
		return core.VerdictNotExecuted
	}
	return core.VerdictStillUnknown
}
