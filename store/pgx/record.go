package pgxstore

import (
	"fmt"
	"hash/fnv"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemkit/idem/core"
)

// row holds the scanned columns of recordCols. Nullable types throughout:
// a Load of an absent record scans a row of NULLs.
type row struct {
	status                        pgtype.Text
	fingerprint                   []byte
	token, version                pgtype.Int8
	respStatus                    pgtype.Int4
	headerNames                   []string
	headerValues                  pgtype.FlatArray[headerValue]
	body                          []byte
	schemaVersion                 pgtype.Int8
	lastError                     pgtype.Text
	lockedUntil, reconcileAfter   pgtype.Timestamptz
	attempts                      pgtype.Int8
	created, completed, expiresAt pgtype.Timestamptz
}

func (r *row) dest(d []any) []any {
	return append(d, &r.status, &r.fingerprint, &r.token, &r.version, &r.respStatus, &r.headerNames, &r.headerValues,
		&r.body, &r.schemaVersion, &r.lastError, &r.lockedUntil, &r.reconcileAfter, &r.attempts,
		&r.created, &r.completed, &r.expiresAt)
}

var statusByName = func() map[string]core.Status {
	m := map[string]core.Status{}
	for s := core.StatusInProgress; s.Valid(); s++ {
		m[s.String()] = s
	}
	return m
}()

// record turns the row into rec (whose Scope the caller set). A row the
// migrations' CHECKs should have refused is an error, never a panic.
func (r *row) record(rec *core.Record) error {
	scope := rec.Scope
	*rec = core.Record{Scope: scope}
	if !r.status.Valid {
		return nil // absent
	}
	st, ok := statusByName[r.status.String]
	if !ok {
		return fmt.Errorf("pgxstore: %s: stored status %q: %w", scope, r.status.String, core.ErrInvalidRecord)
	}
	if len(r.fingerprint) != core.FingerprintBytes || len(r.headerNames) != len(r.headerValues) || r.token.Int64 <= 0 {
		return fmt.Errorf("pgxstore: %s: malformed row: %w", scope, core.ErrInvalidRecord)
	}
	rec.Status = st
	copy(rec.Fingerprint[:], r.fingerprint)
	rec.Token = core.Token(r.token.Int64)
	rec.Version = uint64(r.version.Int64)
	rec.Response.StatusCode = int(r.respStatus.Int32)
	if len(r.headerNames) > 0 {
		rec.Response.Headers = make([]core.Header, len(r.headerNames))
		for i := range r.headerNames {
			rec.Response.Headers[i] = core.Header{Name: r.headerNames[i], Value: string(r.headerValues[i])}
		}
	}
	rec.Response.Body = r.body
	rec.Response.SchemaVersion = uint32(r.schemaVersion.Int64)
	rec.LastErrorCode = core.ErrorCode(r.lastError.String)
	rec.LockedUntil = ts(r.lockedUntil)
	rec.ReconcileAfter = ts(r.reconcileAfter)
	rec.ReconcileAttempts = uint32(r.attempts.Int64)
	rec.CreatedAt = ts(r.created)
	rec.CompletedAt = ts(r.completed)
	rec.ExpiresAt = ts(r.expiresAt)
	return nil
}

// ts is the time of a column, UTC (as memstore gives), zero for NULL.
func ts(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// timeCol is how a write sets one time column: the statement's time plus
// an offset (off valid), or a literal (lit; NULL for the zero time).
type timeCol struct {
	off pgtype.Interval
	lit pgtype.Timestamptz
}

func literal(t time.Time) timeCol {
	if t.IsZero() {
		return timeCol{}
	}
	return timeCol{lit: pgtype.Timestamptz{Time: t, Valid: true}}
}

func offset(d time.Duration) timeCol {
	return timeCol{off: pgtype.Interval{Microseconds: d.Microseconds(), Valid: true}}
}

// write is a record to write and how each of its times is set: locked
// until, reconcile after, created, completed, expires.
type write struct {
	rec   *core.Record
	times [5]timeCol
}

func literalWrite(rec *core.Record) write {
	return write{rec: rec, times: [5]timeCol{literal(rec.LockedUntil), literal(rec.ReconcileAfter), literal(rec.CreatedAt),
		literal(rec.CompletedAt), literal(rec.ExpiresAt)}}
}

// fill sets w's arguments in v: its scope and record (the token as given:
// a reserve passes NULL for it and takes the sequence's).
func (w *write) fill(v *argv, token any) *argv {
	r := w.rec
	names, values := headerArrays(r.Response.Headers)
	var body []byte
	if r.Response.Body != nil {
		body = r.Response.Body
	}
	v.scope(r.Scope.Tenant, r.Scope.Principal, r.Scope.UseCase, r.Scope.Key)
	v[pStatus], v[pFingerprint], v[pToken], v[pVersion] = r.Status.String(), r.Fingerprint[:], token, int64(r.Version)
	v[pResponseStatus], v[pHeaderNames], v[pHeaderValues] = int32(r.Response.StatusCode), names, values
	v[pBody], v[pSchemaVersion], v[pErrorCode] = body, int64(r.Response.SchemaVersion), r.LastErrorCode
	for i := range w.times {
		v[pLockedUntilOffset+2*param(i)], v[pLockedUntil+2*param(i)] = w.times[i].off, w.times[i].lit
	}
	v[pReconcileAttempts] = int64(r.ReconcileAttempts)
	return v
}

func headerArrays(hs []core.Header) ([]string, pgtype.FlatArray[headerValue]) {
	names, values := make([]string, len(hs)), make(pgtype.FlatArray[headerValue], len(hs))
	for i, h := range hs {
		names[i], values[i] = h.Name, headerValue(h.Value)
	}
	return names, values
}

// headerValue is one element of the bytea[] column response_header_values
// (migration 0003): a header value is bytes, not text (RFC 9110 obs-text
// is not UTF-8), and it scans from the row's buffer straight into a string.
// Arrays of it are pgtype.FlatArray, which pgx scans and encodes without
// reflection.
type headerValue string

// ScanBytes implements pgtype.BytesScanner. A NULL element (which the
// column's CHECK refuses) is an error, never an empty value.
func (v *headerValue) ScanBytes(b []byte) error {
	if b == nil {
		return fmt.Errorf("a NULL header value: %w", core.ErrInvalidRecord) // named by classify
	}
	*v = headerValue(b)
	return nil
}

// BytesValue implements pgtype.BytesValuer: never nil, which would be NULL.
func (v headerValue) BytesValue() ([]byte, error) { return append([]byte{}, v...), nil }

// sameRecord compares two records at the database's resolution (a
// microsecond): what a statement wrote against what core.Step decided.
func sameRecord(a, b *core.Record) bool {
	eqt := func(x, y time.Time) bool { return x.Truncate(time.Microsecond).Equal(y.Truncate(time.Microsecond)) }
	return a.Scope == b.Scope && a.Status == b.Status && a.Fingerprint == b.Fingerprint && a.Token == b.Token &&
		a.Version == b.Version && a.Response.Equal(b.Response) && a.LastErrorCode == b.LastErrorCode &&
		eqt(a.LockedUntil, b.LockedUntil) && eqt(a.ReconcileAfter, b.ReconcileAfter) &&
		a.ReconcileAttempts == b.ReconcileAttempts && eqt(a.CreatedAt, b.CreatedAt) &&
		eqt(a.CompletedAt, b.CompletedAt) && eqt(a.ExpiresAt, b.ExpiresAt)
}

// notifyPayload names a scope on the channel without revealing it: every
// listener of the database can read payloads, and keys must not leak. A
// collision only wakes a waiter spuriously.
func notifyPayload(s *core.Scope) string {
	return fmt.Sprintf("%016x", hashStrings(s.Tenant, s.Principal, s.UseCase, s.Key))
}

func hashStrings(parts ...string) uint64 {
	h := fnv.New64a()
	var n [4]byte
	for _, p := range parts {
		l := len(p)
		n[0], n[1], n[2], n[3] = byte(l), byte(l>>8), byte(l>>16), byte(l>>24)
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return h.Sum64()
}

func validUTF8(s string) bool { return utf8.ValidString(s) }
