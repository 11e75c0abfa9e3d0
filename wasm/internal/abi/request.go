package abi

import (
	"errors"
	"time"
	"unsafe"

	"github.com/idemkit/idem/core"
)

// AppendRequest appends the encoding of (p, rec, ev) to dst: the policy,
// then the record, then the event (ABI.md, "Request").
func AppendRequest(dst []byte, rec *core.Record, ev *core.Event, p *core.Policy) []byte {
	dst = appendPolicy(dst, p)
	dst = appendRecord(dst, rec)
	return appendEvent(dst, ev)
}

// appendEvent writes an event: a request's, and an apply effect's.
func appendEvent(dst []byte, ev *core.Event) []byte {
	dst = append(dst, byte(ev.Kind))
	dst = appendTime(dst, ev.Now)
	dst = append(dst, ev.Fingerprint[:]...)
	dst = appendU64(dst, uint64(ev.Token))
	dst = appendResponse(dst, &ev.Response)
	dst = appendString(dst, string(ev.ErrorCode))
	return append(dst, byte(ev.Verdict))
}

func appendPolicy(dst []byte, p *core.Policy) []byte {
	dst = appendU64(dst, uint64(p.LeaseDuration))
	dst = appendU64(dst, uint64(p.TTL))
	dst = appendU64(dst, uint64(p.InFlightWait))
	dst = append(dst, byte(p.InFlightAnswer))
	dst = appendU64(dst, uint64(p.RetryAfter))
	dst = append(dst, byte(p.Expiry), byte(p.Fail))
	dst = appendU64(dst, uint64(p.ReconcileBackoffBase))
	dst = appendU64(dst, uint64(p.ReconcileBackoffMax))
	dst = appendU32(dst, p.ReconcileAttemptsMax)
	dst = appendU64(dst, uint64(p.TombstoneRetention))
	dst = appendU64(dst, uint64(p.KeyBytesMax))
	dst = appendU64(dst, uint64(p.RequestBytesMax))
	return appendU64(dst, uint64(p.ResponseBytesMax))
}

func appendRecord(dst []byte, r *core.Record) []byte {
	dst = appendScope(dst, &r.Scope)
	dst = append(dst, byte(r.Status))
	dst = append(dst, r.Fingerprint[:]...)
	dst = appendU64(dst, uint64(r.Token))
	dst = appendU64(dst, r.Version)
	dst = appendResponse(dst, &r.Response)
	dst = appendString(dst, string(r.LastErrorCode))
	dst = appendTime(dst, r.LockedUntil)
	dst = appendTime(dst, r.ReconcileAfter)
	dst = appendU32(dst, r.ReconcileAttempts)
	dst = appendTime(dst, r.CreatedAt)
	dst = appendTime(dst, r.CompletedAt)
	return appendTime(dst, r.ExpiresAt)
}

func appendScope(dst []byte, s *core.Scope) []byte {
	dst = appendString(dst, s.Tenant)
	dst = appendString(dst, s.Principal)
	dst = appendString(dst, s.UseCase)
	return appendString(dst, s.Key)
}

func appendResponse(dst []byte, r *core.Response) []byte {
	dst = appendU64(dst, uint64(r.StatusCode))
	dst = appendU32(dst, r.SchemaVersion)
	if r.Headers == nil {
		dst = appendU32(dst, nilLength)
	} else {
		dst = appendU32(dst, uint32(len(r.Headers)))
		for i := range r.Headers {
			dst = appendString(dst, r.Headers[i].Name)
			dst = appendString(dst, r.Headers[i].Value)
		}
	}
	if r.Body == nil {
		return appendU32(dst, nilLength)
	}
	dst = appendU32(dst, uint32(len(r.Body)))
	return append(dst, r.Body...)
}

func appendString(dst []byte, s string) []byte {
	dst = appendU32(dst, uint32(len(s)))
	return append(dst, s...)
}

// appendTime writes the zero time as a tag alone, so that IsZero survives,
// and any other time as its instant: a location is a host's concern (the
// host restores it, see ApplyAnswer) and a monotonic reading is dropped by
// Step anyway.
func appendTime(dst []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(dst, TimeZero)
	}
	dst = append(dst, TimeInstant)
	dst = appendU64(dst, uint64(t.Unix()))
	return appendU32(dst, uint32(t.Nanosecond()))
}

// Locations that mark where a time in the guest came from. The guest decodes
// every record time in InputLoc and the event's Now in NowLoc, both UTC
// offsets of zero, so the core computes exactly as in UTC. After Step, a
// field still in InputLoc is unchanged, one in NowLoc was derived from the
// event's Now (the host puts it back in Now's location, as the native Step
// would have), and a zero time without a location was cleared.
var (
	InputLoc = time.FixedZone("idem-input", 0)
	NowLoc   = time.FixedZone("idem-now", 0)
)

// errShort is the one decoding failure: the request ended early or a length
// points past its end.
var errShort = errors.New("request truncated or a length out of range")

// reader decodes a request without copying: strings and byte slices alias
// the request buffer, which the guest keeps unchanged until Step returns and
// which the core does not retain after it.
//
// Its reads are written to be inlined, with one bounds check each and no
// call on the way that succeeds: under Go's wasm backend a function call
// costs tens of nanoseconds, and a request has some sixty fields
// (BENCHMARKS.md, "wasm"). After the first error every read fails and
// returns a zero value; err keeps that first error.
type reader struct {
	b   []byte
	off int
	err error
}

// fail records err unless an error came first, and makes every later read
// fail.
func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b, r.off = nil, 0
}

// at returns the address of b[off]; the caller has checked the bounds.
func (r *reader) at() unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.b)), r.off)
}

func (r *reader) take(n int) []byte {
	if n < 0 || n > len(r.b)-r.off {
		r.fail(errShort)
		return nil
	}
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

func (r *reader) u8() uint8 {
	if r.off >= len(r.b) {
		r.fail(errShort)
		return 0
	}
	v := *(*uint8)(r.at())
	r.off++
	return v
}

func (r *reader) u32() uint32 {
	if r.off > len(r.b)-4 {
		r.fail(errShort)
		return 0
	}
	v := load32(r.at())
	r.off += 4
	return v
}

func (r *reader) u64() uint64 {
	if r.off > len(r.b)-8 {
		r.fail(errShort)
		return 0
	}
	v := load64(r.at())
	r.off += 8
	return v
}

func (r *reader) str() string {
	n := r.u32()
	if uint64(n) > uint64(len(r.b)-r.off) {
		r.fail(errShort)
		return ""
	}
	if n == 0 {
		return ""
	}
	s := unsafe.String((*byte)(r.at()), int(n))
	r.off += int(n)
	return s
}

// bytesOrNil returns nil for nilLength; an empty, non-nil slice is built on
// empty so that two empty slices of one request have distinct addresses (the
// guest tells the event's response from the record's by address).
func (r *reader) bytesOrNil(empty *[1]byte) []byte {
	n := r.u32()
	switch {
	case n == nilLength:
		return nil
	case n == 0:
		return empty[:0:0]
	}
	return r.take(int(n))
}

func (r *reader) time(loc *time.Location) time.Time {
	switch r.u8() {
	case TimeZero:
		return time.Time{}.In(loc)
	case TimeInstant:
		sec := int64(r.u64())
		nsec := r.u32()
		if nsec >= 1e9 {
			r.err = errors.New("nanoseconds out of range")
		}
		return time.Unix(sec, int64(nsec)).In(loc)
	}
	if r.err == nil {
		r.err = errors.New("unknown time tag")
	}
	return time.Time{}
}

// Backing arrays of the record's and the event's empty, non-nil slices.
var (
	recEmptyBody, evEmptyBody       [1]byte
	recEmptyHeaders, evEmptyHeaders [1]core.Header
)

func (r *reader) response(resp *core.Response, emptyBody *[1]byte, emptyHeaders *[1]core.Header) {
	resp.StatusCode = int(int64(r.u64()))
	resp.SchemaVersion = r.u32()
	switch n := r.u32(); {
	case n == nilLength:
		resp.Headers = nil
	case n == 0:
		resp.Headers = emptyHeaders[:0:0]
	case n > uint32(len(r.b)-r.off)/8:
		// Each header takes at least 8 bytes: refuse a count that cannot
		// fit rather than allocate for it.
		r.err = errShort
	default:
		resp.Headers = make([]core.Header, n)
		for i := range resp.Headers {
			resp.Headers[i].Name = r.str()
			resp.Headers[i].Value = r.str()
		}
	}
	resp.Body = r.bytesOrNil(emptyBody)
}

// DecodeRequest decodes b, written by AppendRequest, into rec, ev and p, with
// the times marked as InputLoc and NowLoc say. The decoded values alias b.
func DecodeRequest(b []byte, rec *core.Record, ev *core.Event, p *core.Policy) error {
	r := reader{b: b}
	r.policy(p)
	r.record(rec, InputLoc, &recEmptyBody, &recEmptyHeaders)

	ev.Kind = core.EventKind(r.u8())
	ev.Now = r.time(NowLoc)
	copy(ev.Fingerprint[:], r.take(core.FingerprintBytes))
	ev.Token = core.Token(r.u64())
	r.response(&ev.Response, &evEmptyBody, &evEmptyHeaders)
	ev.ErrorCode = core.ErrorCode(r.str())
	ev.Verdict = core.Verdict(r.u8())
	if r.err == nil && r.off != len(b) {
		r.err = errors.New("trailing bytes")
	}
	if r.err != nil {
		return errors.Join(ErrMalformedRequest, r.err)
	}
	return nil
}
