package redisstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/idemkit/idem/core"
)

// A record is one hash: s status, f fingerprint (32 bytes), t token (hex),
// v version (decimal), r response (responseBytes), e error code, n
// reconcile attempts, and the times lu, ra, ca, co, ex (LockedUntil,
// ReconcileAfter, CreatedAt, CompletedAt, ExpiresAt) as "seconds.nanoseconds"
// since the Unix epoch. Empty and zero values are left out.

// timeFields are the hash fields of the times, in the scripts' order.
var timeFields = [5]string{"lu", "ra", "ca", "co", "ex"}

const (
	fieldLockedUntil = iota + 1 // 1-based, as the scripts count
	fieldReconcileAfter
	fieldCreatedAt
	fieldCompletedAt
	fieldExpiresAt
)

func recordTimes(r *core.Record) [5]*time.Time {
	return [5]*time.Time{&r.LockedUntil, &r.ReconcileAfter, &r.CreatedAt, &r.CompletedAt, &r.ExpiresAt}
}

// encoded is a record as a write script takes it (ARGV 7 to 20): literal
// fields, and for each time a spec: "" (none), "=s.n" (this instant) or
// "+s.n" (the script's clock plus this much, s whole seconds, possibly
// negative, and n nanoseconds). Token "" means the script's fresh token.
type encoded struct {
	status, fingerprint, token, version, response, errorCode, attempts string
	times                                                              [5]string
	// sweepAt and reconcileAt are the time (1 to 5, 0 for none) by which
	// the record is listed in the bucket's due index of that kind.
	sweepAt, reconcileAt int
}

// encodedArgs is how many arguments an encoded record is.
const encodedArgs = 16

// appendArgs appends e's arguments to a.
func (e *encoded) appendArgs(a []any) []any {
	a = append(a, e.status, e.fingerprint, e.token, e.version, e.response, e.errorCode, e.attempts)
	for _, t := range e.times {
		a = append(a, t)
	}
	return append(a, e.sweepAt, e.reconcileAt)
}

// encode is rec with literal times and token.
func encode(rec *core.Record) encoded {
	e := encodeFields(rec)
	for i, t := range recordTimes(rec) {
		if !t.IsZero() {
			e.times[i] = timeSpec("=", *t)
		}
	}
	return e
}

// encodeFields is encode without the times.
func encodeFields(rec *core.Record) encoded {
	e := encoded{
		status: strconv.Itoa(int(rec.Status)), fingerprint: string(rec.Fingerprint[:]),
		token: strconv.FormatUint(uint64(rec.Token), 16), version: strconv.FormatUint(rec.Version, 10),
		response: responseBytes(&rec.Response), errorCode: string(rec.LastErrorCode),
	}
	if rec.ReconcileAttempts != 0 {
		e.attempts = strconv.FormatUint(uint64(rec.ReconcileAttempts), 10)
	}
	e.sweepAt, e.reconcileAt = dueFields(rec)
	return e
}

// dueFields are the times by which rec is due (0: not due), as the workers
// need them: a lease that ends, a TTL or a tombstone's retention that ends,
// and an unknown record's next reconciliation.
func dueFields(rec *core.Record) (sweepAt, reconcileAt int) {
	switch rec.Status {
	case core.StatusInProgress:
		if !rec.LockedUntil.IsZero() {
			sweepAt = fieldLockedUntil
		}
	case core.StatusCompleted, core.StatusFailedRetryable, core.StatusExpired:
		if !rec.ExpiresAt.IsZero() {
			sweepAt = fieldExpiresAt
		}
	case core.StatusUnknown:
		if !rec.ReconcileAfter.IsZero() {
			reconcileAt = fieldReconcileAfter
		}
	}
	return sweepAt, reconcileAt
}

// dueAt is when rec falls due for a kind (sweep if sweep), and whether it does.
func dueAt(rec *core.Record, sweep bool) (time.Time, bool) {
	s, r := dueFields(rec)
	i := r
	if sweep {
		i = s
	}
	if i == 0 {
		return time.Time{}, false
	}
	return *recordTimes(rec)[i-1], true
}

// timeString is t as "seconds.nanoseconds" since the Unix epoch, the
// nanoseconds always nine digits.
func timeString(t time.Time) string { return timeSpec("", t) }

// timeSpec is the spec of the instant t: kind ("=", or "" for the bare
// time) then its timeString, in one allocation.
func timeSpec(kind string, t time.Time) string {
	return secondsNanos(kind, t.Unix(), int64(t.Nanosecond()))
}

// offsetString is d as "seconds.nanoseconds", the seconds floored so that
// the nanoseconds are never negative.
func offsetString(d time.Duration) string { return offsetSpec("", d) }

// offsetSpec is kind ("+", or "") then offsetString(d), in one allocation.
func offsetSpec(kind string, d time.Duration) string {
	s, n := int64(d/time.Second), int64(d%time.Second)
	if n < 0 {
		s, n = s-1, n+int64(time.Second)
	}
	return secondsNanos(kind, s, n)
}

// secondsNanos is kind, then s, a dot and n (0 <= n < 1e9) as nine digits.
func secondsNanos(kind string, s, n int64) string {
	var buf [40]byte
	b := append(buf[:0], kind...)
	b = strconv.AppendInt(b, s, 10)
	b = append(b, ".000000000"...)
	for i := len(b) - 1; n > 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b)
}

func parseTime(v string) (time.Time, error) {
	s, n, ok := strings.Cut(v, ".")
	sec, err1 := strconv.ParseInt(s, 10, 64)
	ns, err2 := strconv.ParseInt(n, 10, 64)
	if !ok || err1 != nil || err2 != nil || len(n) != 9 || ns < 0 {
		return time.Time{}, fmt.Errorf("time %q", v)
	}
	return time.Unix(sec, ns).UTC(), nil
}

// responseBytes is a response as bytes: status code, schema version and
// header count as varints, each header's name and value length-prefixed,
// then the body. The zero response is empty (no field).
func responseBytes(r *core.Response) string {
	if r.StatusCode == 0 && r.SchemaVersion == 0 && len(r.Headers) == 0 && len(r.Body) == 0 {
		return ""
	}
	n := 3*binary.MaxVarintLen64 + len(r.Body)
	for _, h := range r.Headers {
		n += 2*binary.MaxVarintLen64 + len(h.Name) + len(h.Value)
	}
	b := make([]byte, 0, n)
	b = binary.AppendVarint(b, int64(r.StatusCode))
	b = binary.AppendUvarint(b, uint64(r.SchemaVersion))
	b = binary.AppendUvarint(b, uint64(len(r.Headers)))
	for _, h := range r.Headers {
		b = binary.AppendUvarint(b, uint64(len(h.Name)))
		b = append(b, h.Name...)
		b = binary.AppendUvarint(b, uint64(len(h.Value)))
		b = append(b, h.Value...)
	}
	return string(append(b, r.Body...))
}

// byteReader reads responseBytes; the first failure sticks.
type byteReader struct {
	b  []byte
	ok bool
}

func (r *byteReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.ok = false
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *byteReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.ok = false
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func parseResponse(v string) (core.Response, error) {
	var resp core.Response
	if v == "" {
		return resp, nil // the zero response, which is never stored
	}
	code, n := binary.Varint([]byte(v))
	if n <= 0 || code < math.MinInt32 || code > math.MaxInt32 {
		return resp, fmt.Errorf("response status")
	}
	r := byteReader{b: []byte(v[n:]), ok: true}
	resp.StatusCode = int(code)
	schema := r.uvarint()
	count := r.uvarint()
	if schema > math.MaxUint32 || count > uint64(len(r.b)) {
		return resp, fmt.Errorf("response header")
	}
	resp.SchemaVersion = uint32(schema)
	if count > 0 {
		resp.Headers = make([]core.Header, count)
		for i := range resp.Headers {
			resp.Headers[i] = core.Header{Name: r.str(), Value: r.str()}
		}
	}
	if !r.ok {
		return resp, fmt.Errorf("response headers")
	}
	if len(r.b) > 0 {
		resp.Body = r.b
	}
	return resp, nil
}
