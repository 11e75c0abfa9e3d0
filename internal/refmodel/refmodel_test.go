package refmodel

import (
	"math"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
)

var (
	t0    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	scope = core.Scope{Principal: "user-1", UseCase: "payments.create", Key: "550e8400-e29b-41d4-a716-446655440000"}
	fpA   = core.Fingerprint{0xa}
	fpB   = core.Fingerprint{0xb}
	paid  = core.Response{StatusCode: 201, Headers: []core.Header{{Name: "Content-Type", Value: "application/json"}}, Body: []byte(`{"id":1}`), SchemaVersion: 1}
)

// TestDiffNamesEachField: a record that differs from another in one field
// only is told apart by that field's name; an equal one, with its own
// copies of the slices, by none.
func TestDiffNamesEachField(t *testing.T) {
	want := core.Record{Scope: scope, Status: core.StatusCompleted, Fingerprint: fpA, Token: 7, Version: 3, Response: paid,
		LastErrorCode: "x", LockedUntil: t0, ReconcileAfter: t0, ReconcileAttempts: 2, CreatedAt: t0, CompletedAt: t0, ExpiresAt: t0}
	same := want
	same.Response = core.Response{StatusCode: 201, Headers: []core.Header{{Name: "Content-Type", Value: "application/json"}}, Body: []byte(`{"id":1}`), SchemaVersion: 1}
	if d := Diff(&want, &same); d != "" {
		t.Fatalf("Diff of equal records: %q", d)
	}
	for name, edit := range map[string]func(r *core.Record){
		"scope":              func(r *core.Record) { r.Scope.Tenant = "acme" },
		"status":             func(r *core.Record) { r.Status = core.StatusExpired },
		"fingerprint":        func(r *core.Record) { r.Fingerprint = fpB },
		"token":              func(r *core.Record) { r.Token++ },
		"version":            func(r *core.Record) { r.Version++ },
		"last error code":    func(r *core.Record) { r.LastErrorCode = "y" },
		"locked_until":       func(r *core.Record) { r.LockedUntil = t0.Add(1) },
		"reconcile_after":    func(r *core.Record) { r.ReconcileAfter = t0.Add(-1) },
		"reconcile attempts": func(r *core.Record) { r.ReconcileAttempts++ },
		"created_at":         func(r *core.Record) { r.CreatedAt = time.Time{} },
		"completed_at":       func(r *core.Record) { r.CompletedAt = t0.Add(time.Second) },
		"expires_at":         func(r *core.Record) { r.ExpiresAt = t0.Add(time.Hour) },
		"response":           func(r *core.Record) { r.Response.Headers = []core.Header{{Name: "Content-Type", Value: "text/plain"}} },
	} {
		got := want
		edit(&got)
		if d := Diff(&want, &got); d != name {
			t.Errorf("one field changed (%s): Diff says %q", name, d)
		}
	}
}

// TestSameResponseIsByteForByte: a response differs from another by any
// of its status, schema, headers (names, values, order) or body.
func TestSameResponseIsByteForByte(t *testing.T) {
	for name, edit := range map[string]func(r *core.Response){
		"status":       func(r *core.Response) { r.StatusCode = 200 },
		"schema":       func(r *core.Response) { r.SchemaVersion = 2 },
		"header name":  func(r *core.Response) { r.Headers = []core.Header{{Name: "Content-Length", Value: "application/json"}} },
		"header value": func(r *core.Response) { r.Headers = []core.Header{{Name: "Content-Type", Value: "text/plain"}} },
		"headers":      func(r *core.Response) { r.Headers = append(r.Headers[:1:1], core.Header{Name: "X", Value: "1"}) },
		"body":         func(r *core.Response) { r.Body = []byte(`{"id":2}`) },
	} {
		other := paid
		edit(&other)
		if SameResponse(paid, other) {
			t.Errorf("another %s passes for the same response", name)
		}
	}
}

// TestReconcileBackoff: base * 2^n, capped, whatever n, and never past the
// cap on the way to it, however large the cap.
func TestReconcileBackoff(t *testing.T) {
	p := core.PolicyDefault()
	p.ReconcileBackoffBase, p.ReconcileBackoffMax = 100*time.Millisecond, time.Second
	for n, want := range map[uint32]time.Duration{0: 100 * time.Millisecond, 1: 200 * time.Millisecond, 3: 800 * time.Millisecond, 4: time.Second, 1 << 31: time.Second} {
		if got := ReconcileBackoff(&p, n); got != want {
			t.Errorf("backoff after %d answers: %v, want %v", n, got, want)
		}
	}
	p.ReconcileBackoffBase, p.ReconcileBackoffMax = 3*time.Second, math.MaxInt64
	if got := ReconcileBackoff(&p, math.MaxUint32); got != math.MaxInt64 {
		t.Errorf("backoff under the largest cap after 2^32-1 answers: %v, want the cap", got)
	}
}

// TestReserveAtExpiry: a settled record frees its key at exactly its
// expires_at, and not a nanosecond before; a lease is over at exactly its
// locked_until.
func TestReserveAtExpiry(t *testing.T) {
	p := core.PolicyDefault()
	at := t0.Add(time.Hour)
	for _, c := range []struct {
		st   core.Status
		fp   core.Fingerprint
		now  time.Time
		want core.DecisionKind
	}{
		{core.StatusCompleted, fpA, at, core.DecisionExecute},
		{core.StatusCompleted, fpA, at.Add(-1), core.DecisionReplay},
		{core.StatusFailedRetryable, fpB, at, core.DecisionExecute},
		{core.StatusFailedRetryable, fpB, at.Add(-1), core.DecisionMismatch},
		{core.StatusInProgress, fpA, at, core.DecisionReconciling},
		{core.StatusInProgress, fpA, at.Add(-1), core.DecisionInFlight},
		{core.StatusUnknown, fpA, at.Add(time.Hour), core.DecisionReconciling},
	} {
		rec := core.Record{Scope: scope, Status: c.st, Fingerprint: fpA, Token: 7, Version: 2, CreatedAt: t0, LockedUntil: at, ExpiresAt: at}
		ev := core.Event{Kind: core.EventReserve, Fingerprint: c.fp, Token: 8, Now: c.now}
		var o Outcome
		if Step(&o, &rec, &ev, &p); o.Decision.Kind != c.want {
			t.Errorf("reserve on a %v record due at %v, at %v: %v, want %v", c.st, at, c.now, o.Decision.Kind, c.want)
		}
	}
}
