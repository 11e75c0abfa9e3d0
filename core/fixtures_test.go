package core

import (
	"crypto/sha256"
	"time"
)

// Shared fixtures of the core's tests.
var (
	t0     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	scopeA = Scope{Tenant: "acme", Principal: "user-1", UseCase: "payments.create", Key: "550e8400-e29b-41d4-a716-446655440000"}
	fpA    = Fingerprint(sha256.Sum256([]byte("request A")))
	fpB    = Fingerprint(sha256.Sum256([]byte("request B")))
	resp1  = Response{StatusCode: 201, Headers: []Header{{"Content-Type", "application/json"}}, Body: []byte(`{"paymentId":"p-1"}`), SchemaVersion: 1}
	resp2  = Response{StatusCode: 402, Body: []byte(`{"error":"card_declined"}`), SchemaVersion: 1}
)

func at(d time.Duration) time.Time { return t0.Add(d) }

// stepped is Step's result with the record it changed.
type stepped struct {
	Transition
	Next Record
}

// step calls Step on a copy of cur.
func step(cur Record, ev Event, p Policy) (stepped, error) {
	next := cur
	r, err := Step(&next, &ev, &p)
	return stepped{r, next}, err
}

// mustStep steps and fails the test on an error.
func mustStep(t interface {
	Helper()
	Fatalf(string, ...any)
}, cur Record, ev Event, p Policy) stepped {
	t.Helper()
	r, err := step(cur, ev, p)
	if err != nil {
		t.Fatalf("Step(%s, %v): %v", cur.Describe(), ev.Kind, err)
	}
	return r
}

// inProgress is a record reserved by token at t0 with fingerprint fpA.
func inProgress(token Token) Record {
	p := PolicyDefault()
	return Record{
		Scope: scopeA, Status: StatusInProgress, Fingerprint: fpA, Token: token, Version: 1,
		LockedUntil: t0.Add(p.LeaseDuration), CreatedAt: t0, ExpiresAt: t0.Add(p.TTL),
	}
}

func withStatus(r Record, s Status) Record {
	r.Status = s
	switch s {
	case StatusCompleted:
		r.Response = resp1
		r.CompletedAt = r.CreatedAt.Add(time.Second)
		r.LockedUntil = time.Time{}
	case StatusUnknown:
		// As the core leaves it: the lease end stays, since the reconciler
		// may not call the attempt not-executed before it.
		r.LastErrorCode = ErrorCodeLeaseExpired
		r.ReconcileAfter = r.LockedUntil
	case StatusFailedRetryable:
		r.LastErrorCode = ErrorCodeNotExecuted
		r.LockedUntil = time.Time{}
	}
	return r
}
