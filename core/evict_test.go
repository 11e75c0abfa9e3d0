package core

import (
	"errors"
	"testing"
	"time"
)

// TestEvict: an operator's Evict removes a settled record or a tombstone
// with its token (the key is free: the next reserve executes), is stale
// with another token, never applies to a record in progress or unknown
// (or absent), and needs a token.
func TestEvict(t *testing.T) {
	p := PolicyDefault()
	now := at(time.Minute)
	for _, st := range []Status{StatusCompleted, StatusFailedRetryable, StatusExpired} {
		rec := withStatus(inProgress(7), st)
		r := mustStep(t, rec, Event{Kind: EventEvict, Now: now, Token: 7}, p)
		if r.Decision.Kind != DecisionEvicted || r.Write.Kind != WriteDelete || r.Next.Exists() ||
			r.Write.ExpectVersion != rec.Version || r.Write.ExpectToken != 7 {
			t.Errorf("evict %v: %+v, %s", st, r.Transition, r.Next.Describe())
		}
		if again := mustStep(t, r.Next, Event{Kind: EventReserve, Now: now, Token: 8, Fingerprint: fpA}, p); again.Decision.Kind != DecisionExecute {
			t.Errorf("a reserve after evicting %v: %v, want execute", st, again.Decision.Kind)
		}
		if s := mustStep(t, rec, Event{Kind: EventEvict, Now: now, Token: 6}, p); s.Decision.Kind != DecisionStale || s.Write.Kind != WriteNone {
			t.Errorf("evict %v with another token: %+v", st, s.Transition)
		}
	}
	for _, rec := range []Record{inProgress(7), withStatus(inProgress(7), StatusUnknown), {Scope: scopeA}} {
		if r := mustStep(t, rec, Event{Kind: EventEvict, Now: now, Token: 7}, p); r.Decision.Kind != DecisionNotApplicable || r.Write.Kind != WriteNone {
			t.Errorf("evict %s: %+v", rec.Describe(), r.Transition)
		}
	}
	if _, err := step(withStatus(inProgress(7), StatusCompleted), Event{Kind: EventEvict, Now: now}, p); !errors.Is(err, ErrTokenMissing) {
		t.Errorf("evict without a token: %v", err)
	}
}
