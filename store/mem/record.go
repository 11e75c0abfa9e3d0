package memstore

import (
	"math"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// compact is a record as the store keeps it: half the bytes of a
// core.Record, with times as Unix nanoseconds (zeroTime for the zero time).
type compact struct {
	scope                                                    core.Scope
	fingerprint                                              core.Fingerprint
	token                                                    core.Token
	version                                                  uint64
	headers                                                  []core.Header
	body                                                     []byte
	lastErrorCode                                            string
	lockedUntil, reconcileAfter, created, completed, expires int64
	statusCode                                               int32
	schemaVersion, reconcileAttempts                         uint32
	status                                                   core.Status
}

// zeroTime stands for time.Time{} in a compact record.
const zeroTime = math.MinInt64

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return zeroTime
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == zeroTime {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// set stores r; the response's slices are copied when copyResponse is set.
func (c *compact) set(r *core.Record, copyResponse bool) {
	c.scope = r.Scope
	c.status = r.Status
	c.fingerprint = r.Fingerprint
	c.token = r.Token
	c.version = r.Version
	c.statusCode = int32(r.Response.StatusCode)
	c.schemaVersion = r.Response.SchemaVersion
	c.headers, c.body = r.Response.Headers, r.Response.Body
	if copyResponse {
		resp := r.Response.Clone()
		c.headers, c.body = resp.Headers, resp.Body
	}
	c.lastErrorCode = string(r.LastErrorCode)
	c.lockedUntil = nanos(r.LockedUntil)
	c.reconcileAfter = nanos(r.ReconcileAfter)
	c.reconcileAttempts = r.ReconcileAttempts
	c.created = nanos(r.CreatedAt)
	c.completed = nanos(r.CompletedAt)
	c.expires = nanos(r.ExpiresAt)
}

// get returns the record. Its response shares the store's slices.
func (c *compact) get(r *core.Record) {
	*r = core.Record{
		Scope:             c.scope,
		Status:            c.status,
		Fingerprint:       c.fingerprint,
		Token:             c.token,
		Version:           c.version,
		Response:          core.Response{StatusCode: int(c.statusCode), Headers: c.headers, Body: c.body, SchemaVersion: c.schemaVersion},
		LastErrorCode:     core.ErrorCode(c.lastErrorCode),
		LockedUntil:       fromNanos(c.lockedUntil),
		ReconcileAfter:    fromNanos(c.reconcileAfter),
		ReconcileAttempts: c.reconcileAttempts,
		CreatedAt:         fromNanos(c.created),
		CompletedAt:       fromNanos(c.completed),
		ExpiresAt:         fromNanos(c.expires),
	}
}

// dueAt is when the record becomes due for kind, if ever.
func (c *compact) dueAt(kind store.DueKind) (int64, bool) {
	switch {
	case kind == store.DueSweep && c.status == core.StatusInProgress:
		return c.lockedUntil, true
	case kind == store.DueSweep && (c.status == core.StatusCompleted || c.status == core.StatusFailedRetryable || c.status == core.StatusExpired):
		return c.expires, true
	case kind == store.DueReconcile && c.status == core.StatusUnknown && c.reconcileAfter != zeroTime:
		return c.reconcileAfter, true
	}
	return 0, false
}
