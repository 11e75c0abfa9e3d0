package linearizability

import (
	"strconv"
	"strings"
	"time"

	"github.com/idemkit/idem/core"
)

// digester hashes the content of records (FNV-1a, 64 bits), with times cut
// to a resolution: a driver that keeps microseconds (PostgreSQL) stores the
// "same" record as one that keeps nanoseconds.
type digester struct {
	res time.Duration // 0 or 1: exact
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

type fnv64 uint64

func (h *fnv64) bytes(b []byte) {
	for _, c := range b {
		*h = (*h ^ fnv64(c)) * fnvPrime
	}
	h.u64(uint64(len(b)))
}

func (h *fnv64) str(s string) {
	for i := 0; i < len(s); i++ {
		*h = (*h ^ fnv64(s[i])) * fnvPrime
	}
	h.u64(uint64(len(s)))
}

func (h *fnv64) u64(v uint64) {
	for range 8 {
		*h = (*h ^ fnv64(v&0xff)) * fnvPrime
		v >>= 8
	}
}

// trunc is t's Unix nanoseconds cut to the resolution; 0 for the zero time.
func (d digester) trunc(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	n := t.UnixNano()
	if d.res > 1 {
		r := int64(d.res)
		n -= ((n % r) + r) % r
	}
	return uint64(n)
}

// record hashes every field of r; the scope only if withScope.
func (d digester) record(r *core.Record, withScope bool) uint64 {
	h := fnv64(fnvOffset)
	if withScope {
		h.str(r.Scope.Tenant)
		h.str(r.Scope.Principal)
		h.str(r.Scope.UseCase)
		h.str(r.Scope.Key)
	}
	h.u64(uint64(r.Status))
	h.bytes(r.Fingerprint[:])
	h.u64(uint64(r.Token))
	h.u64(r.Version)
	h.u64(uint64(r.Response.StatusCode))
	h.u64(uint64(r.Response.SchemaVersion))
	h.u64(uint64(len(r.Response.Headers)))
	for _, hd := range r.Response.Headers {
		h.str(hd.Name)
		h.str(hd.Value)
	}
	h.bytes(r.Response.Body)
	h.str(string(r.LastErrorCode))
	h.u64(d.trunc(r.LockedUntil))
	h.u64(d.trunc(r.ReconcileAfter))
	h.u64(uint64(r.ReconcileAttempts))
	h.u64(d.trunc(r.CreatedAt))
	h.u64(d.trunc(r.CompletedAt))
	h.u64(d.trunc(r.ExpiresAt))
	return uint64(h)
}

// equal compares two records field by field (scope excluded), times cut to
// the resolution.
func (d digester) equal(a, b *core.Record) bool {
	return a.Status == b.Status && a.Fingerprint == b.Fingerprint && a.Token == b.Token &&
		a.Version == b.Version && a.Response.Equal(b.Response) && a.LastErrorCode == b.LastErrorCode &&
		d.trunc(a.LockedUntil) == d.trunc(b.LockedUntil) && d.trunc(a.ReconcileAfter) == d.trunc(b.ReconcileAfter) &&
		a.ReconcileAttempts == b.ReconcileAttempts && d.trunc(a.CreatedAt) == d.trunc(b.CreatedAt) &&
		d.trunc(a.CompletedAt) == d.trunc(b.CompletedAt) && d.trunc(a.ExpiresAt) == d.trunc(b.ExpiresAt)
}

// within reports whether two durations differ by less than the resolution.
func (d digester) within(a, b time.Duration) bool {
	diff := a - b
	if diff < 0 {
		diff = -diff
	}
	return diff == 0 || (d.res > 1 && diff < d.res)
}

// short is a record in a few words, for the visualization: status,
// version, token, fingerprint, and what distinguishes it.
func short(r *core.Record) string {
	if !r.Exists() {
		return "absent"
	}
	var b strings.Builder
	b.WriteString(r.Status.String())
	b.WriteString(" v")
	b.WriteString(strconv.FormatUint(r.Version, 10))
	b.WriteString(" t")
	b.WriteString(strconv.FormatUint(uint64(r.Token), 10))
	b.WriteString(" fp=")
	b.WriteString(r.Fingerprint.Short())
	if r.Response.StatusCode != 0 {
		b.WriteString(" resp=")
		b.WriteString(strconv.Itoa(r.Response.StatusCode))
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(len(r.Response.Body)))
		b.WriteByte('B')
	}
	if r.LastErrorCode != "" {
		b.WriteString(" err=")
		b.WriteString(string(r.LastErrorCode))
	}
	return b.String()
}

// clock is a time of day with nanoseconds, for descriptions.
func clock(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return t.UTC().Format("15:04:05.000000000")
}

// SameRecord reports whether a and b are the same record at the options'
// time resolution, as the models compare them: for a driver's tests that
// read back what they wrote.
func (o ModelOptions) SameRecord(a, b *core.Record) bool {
	return digester{res: o.TimeResolution}.equal(a, b)
}
