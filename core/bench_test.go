package core

import (
	"testing"
	"time"
)

// The Step benchmarks: 0 allocs/op and under 50 ns/op are the goals.

func BenchmarkStepReserveAbsent(b *testing.B) {
	p := PolicyDefault()
	cur := Record{Scope: scopeA}
	ev := Event{Kind: EventReserve, Now: t0, Fingerprint: fpA, Token: 1}
	b.ReportAllocs()
	for b.Loop() {
		rec := cur
		r, err := Step(&rec, &ev, &p)
		if err != nil || r.Decision.Kind != DecisionExecute {
			b.Fatal(r.Decision.Kind, err)
		}
	}
}

func BenchmarkStepReserveReplay(b *testing.B) {
	p := PolicyDefault()
	cur := withStatus(inProgress(1), StatusCompleted)
	ev := Event{Kind: EventReserve, Now: at(time.Minute), Fingerprint: fpA, Token: 2}
	b.ReportAllocs()
	for b.Loop() {
		rec := cur
		r, err := Step(&rec, &ev, &p)
		if err != nil || r.Decision.Kind != DecisionReplay {
			b.Fatal(r.Decision.Kind, err)
		}
	}
}

func BenchmarkStepComplete(b *testing.B) {
	p := PolicyDefault()
	cur := inProgress(1)
	ev := Event{Kind: EventComplete, Now: at(time.Second), Token: 1, Response: resp1}
	b.ReportAllocs()
	for b.Loop() {
		rec := cur
		r, err := Step(&rec, &ev, &p)
		if err != nil || r.Decision.Kind != DecisionCompleted {
			b.Fatal(r.Decision.Kind, err)
		}
	}
}

// BenchmarkScopeValidate is the SPEC §3 check every request's scope goes
// through (BENCHMARKS.md, the replay's floor).
func BenchmarkScopeValidate(b *testing.B) {
	s := Scope{Tenant: "acme", Principal: "user-42", UseCase: "payments.create", Key: "550e8400-e29b-41d4-a716-446655440000"}
	for b.Loop() {
		if err := s.Validate(KeyBytesMax); err != nil {
			b.Fatal(err)
		}
	}
}
