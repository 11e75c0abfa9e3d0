package refmodel

import (
	"bytes"

	"github.com/idemkit/idem/core"
)

// Diff names the first field in which got differs from want, "" when
// none does: every field of a record, times compared as instants,
// responses byte for byte. It is how the model's users hold a record to
// the model's (and the simulator a read to the last write).
func Diff(want, got *core.Record) string {
	switch {
	case want.Scope != got.Scope:
		return "scope"
	case want.Status != got.Status:
		return "status"
	case want.Fingerprint != got.Fingerprint:
		return "fingerprint"
	case want.Token != got.Token:
		return "token"
	case want.Version != got.Version:
		return "version"
	case !SameResponse(want.Response, got.Response):
		return "response"
	case want.LastErrorCode != got.LastErrorCode:
		return "last error code"
	case !want.LockedUntil.Equal(got.LockedUntil):
		return "locked_until"
	case !want.ReconcileAfter.Equal(got.ReconcileAfter):
		return "reconcile_after"
	case want.ReconcileAttempts != got.ReconcileAttempts:
		return "reconcile attempts"
	case !want.CreatedAt.Equal(got.CreatedAt):
		return "created_at"
	case !want.CompletedAt.Equal(got.CompletedAt):
		return "completed_at"
	case !want.ExpiresAt.Equal(got.ExpiresAt):
		return "expires_at"
	}
	return ""
}

// SameResponse reports whether a and b are byte for byte the same answer:
// status, schema version, every header (name and value, in order) and the
// body. It is the model's own comparison, not core's Response.Equal: a
// broken Equal must not pass for a correct one.
func SameResponse(a, b core.Response) bool {
	return a.StatusCode == b.StatusCode && a.SchemaVersion == b.SchemaVersion &&
		sameHeaders(a.Headers, b.Headers) && bytes.Equal(a.Body, b.Body)
}

// sameHeaders reports whether a and b hold the same headers, names and
// values, in the same order.
func sameHeaders(a, b []core.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
