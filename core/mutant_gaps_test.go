package core

import "testing"

// Gaps the mutant catalogue (mutants/, MUTANTS.md) found: each test here
// fails on the mutant it names.

// TestCompleteAgainWithOtherHeaderValueIsConflict: Response.Equal compares
// header values too, so a second Complete whose headers differ only in a
// value is a Conflict, not acknowledged (mutant
// core-response-equal-ignores-headers).
func TestCompleteAgainWithOtherHeaderValueIsConflict(t *testing.T) {
	other := resp1.Clone()
	other.Headers[0].Value = "text/plain"
	if resp1.Equal(other) {
		t.Fatalf("Equal(%s, %s) = true, want false: the header values differ", resp1.Describe(), other.Describe())
	}
	rec := withStatus(inProgress(7), StatusCompleted)
	r := mustStep(t, rec, Event{Kind: EventComplete, Token: 7, Now: at(2e9), Response: other}, PolicyDefault())
	if r.Decision.Kind != DecisionConflict || r.Write.Kind != WriteNone {
		t.Fatalf("Complete again with another header value: %v, write %v; want conflict, no write", r.Decision.Kind, r.Write.Kind)
	}
}
