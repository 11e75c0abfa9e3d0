package abi

import (
	"errors"
	"strings"
	"time"
	"unsafe"

	"github.com/idemkit/idem/core"
)

// AppendRefused appends the answer for an error of Step: AnswerRefused, the
// error's sentinel index (SentinelOf) and its message.
func AppendRefused(dst []byte, err error) []byte {
	dst = append(dst, AnswerRefused, SentinelOf(err))
	return appendString(dst, err.Error())
}

// AppendOK appends the answer for a step that succeeded: AnswerOK, the
// Transition, and the fields of after that differ from before (the record as
// decoded), see the Changed bits. ev is the event Step was given: a response
// that Step took from it is sent as ResponseFromEvent, not as bytes.
func AppendOK(dst []byte, res *core.Transition, before, after *core.Record, ev *core.Event) []byte {
	dst = appendTransition(append(dst, AnswerOK), res)
	mask := changedMask(before, after)
	dst = appendU32(dst, mask)
	return appendChanged(dst, mask, after, ev)
}

// changedMask says which fields of the record Step changed (Changed*): the
// answer carries only those.
func changedMask(before, after *core.Record) uint32 {
	var mask uint32
	if !sameString(after.Scope.Tenant, before.Scope.Tenant) || !sameString(after.Scope.Principal, before.Scope.Principal) ||
		!sameString(after.Scope.UseCase, before.Scope.UseCase) || !sameString(after.Scope.Key, before.Scope.Key) {
		mask |= ChangedScope
	}
	if after.Status != before.Status {
		mask |= ChangedStatus
	}
	if after.Fingerprint != before.Fingerprint {
		mask |= ChangedFingerprint
	}
	if after.Token != before.Token {
		mask |= ChangedToken
	}
	if after.Version != before.Version {
		mask |= ChangedVersion
	}
	if !sameResponse(&after.Response, &before.Response) {
		mask |= ChangedResponse
	}
	if !sameString(string(after.LastErrorCode), string(before.LastErrorCode)) {
		mask |= ChangedLastErrorCode
	}
	if !unchangedTime(after.LockedUntil, before.LockedUntil) {
		mask |= ChangedLockedUntil
	}
	if !unchangedTime(after.ReconcileAfter, before.ReconcileAfter) {
		mask |= ChangedReconcileAfter
	}
	if after.ReconcileAttempts != before.ReconcileAttempts {
		mask |= ChangedReconcileAttempts
	}
	if !unchangedTime(after.CreatedAt, before.CreatedAt) {
		mask |= ChangedCreatedAt
	}
	if !unchangedTime(after.CompletedAt, before.CompletedAt) {
		mask |= ChangedCompletedAt
	}
	if !unchangedTime(after.ExpiresAt, before.ExpiresAt) {
		mask |= ChangedExpiresAt
	}
	return mask
}

// appendChanged appends the fields of after that mask names, in the ABI's
// order; a response equal to the event's is named, not copied.
func appendChanged(dst []byte, mask uint32, after *core.Record, ev *core.Event) []byte {
	if mask&ChangedScope != 0 {
		dst = appendScope(dst, &after.Scope)
	}
	if mask&ChangedStatus != 0 {
		dst = append(dst, byte(after.Status))
	}
	if mask&ChangedFingerprint != 0 {
		dst = append(dst, after.Fingerprint[:]...)
	}
	if mask&ChangedToken != 0 {
		dst = appendU64(dst, uint64(after.Token))
	}
	if mask&ChangedVersion != 0 {
		dst = appendU64(dst, after.Version)
	}
	if mask&ChangedResponse != 0 {
		switch {
		case sameResponse(&after.Response, &ev.Response):
			dst = append(dst, ResponseFromEvent)
		case isZeroResponse(&after.Response):
			dst = append(dst, ResponseCleared)
		default:
			dst = append(dst, ResponseExplicit)
			dst = appendResponse(dst, &after.Response)
		}
	}
	if mask&ChangedLastErrorCode != 0 {
		dst = appendString(dst, string(after.LastErrorCode))
	}
	if mask&ChangedLockedUntil != 0 {
		dst = appendAnswerTime(dst, after.LockedUntil)
	}
	if mask&ChangedReconcileAfter != 0 {
		dst = appendAnswerTime(dst, after.ReconcileAfter)
	}
	if mask&ChangedReconcileAttempts != 0 {
		dst = appendU32(dst, after.ReconcileAttempts)
	}
	if mask&ChangedCreatedAt != 0 {
		dst = appendAnswerTime(dst, after.CreatedAt)
	}
	if mask&ChangedCompletedAt != 0 {
		dst = appendAnswerTime(dst, after.CompletedAt)
	}
	if mask&ChangedExpiresAt != 0 {
		dst = appendAnswerTime(dst, after.ExpiresAt)
	}
	return dst
}

// sameResponse reports whether a and b are the same value sharing the same
// arrays: what is left of a response Step did not touch, or took whole from
// the event.
func sameResponse(a, b *core.Response) bool {
	return a.StatusCode == b.StatusCode && a.SchemaVersion == b.SchemaVersion &&
		len(a.Headers) == len(b.Headers) && unsafe.SliceData(a.Headers) == unsafe.SliceData(b.Headers) &&
		len(a.Body) == len(b.Body) && unsafe.SliceData(a.Body) == unsafe.SliceData(b.Body)
}

func isZeroResponse(r *core.Response) bool {
	return r.StatusCode == 0 && r.SchemaVersion == 0 && r.Headers == nil && r.Body == nil
}

// sameString is a == b without a call when a and b share their bytes, as a
// field Step left alone shares them with its copy in before: under Go's wasm
// backend the call to runtime.memequal is what a comparison costs.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// unchangedTime reports whether after is still the time decoded into the
// field: in InputLoc (see there) and the same instant. before is such a time
// (DecodeRequest), and a time without a monotonic reading has one
// representation per instant and location, so == decides it without the
// calls of Location and Equal.
func unchangedTime(after, before time.Time) bool {
	return after == before
}

func appendAnswerTime(dst []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(dst, TimeZero)
	}
	tag := byte(TimeInstant)
	if t.Location() == NowLoc {
		tag = TimeFromNow
	}
	dst = append(dst, tag)
	dst = appendU64(dst, uint64(t.Unix()))
	return appendU32(dst, uint32(t.Nanosecond()))
}

// ApplyAnswer decodes an answer of the guest to Step(rec, ev, p): it returns
// the Transition and changes rec as the native Step would have, or returns the
// rebuilt error and leaves rec alone. b is only read during the call: every
// string and slice kept is copied (or, for a response taken from the event,
// shared with ev as natively).
func ApplyAnswer(b []byte, rec *core.Record, ev *core.Event) (core.Transition, error) {
	r := reader{b: b}
	switch r.u8() {
	case AnswerRefused:
		return core.Transition{}, r.refused()
	case AnswerOK:
	default:
		return core.Transition{}, malformed(errors.New("unknown answer status"))
	}
	var res core.Transition
	res.Decision.Kind = core.DecisionKind(r.u8())
	res.Decision.Token = core.Token(r.u64())
	res.Decision.RetryAfter = time.Duration(r.u64())
	res.Write.Kind = core.WriteKind(r.u8())
	res.Write.ExpectVersion = r.u64()
	res.Write.ExpectToken = core.Token(r.u64())
	mask := r.u32()
	if mask&^changedAll != 0 {
		return core.Transition{}, malformed(errors.New("unknown change bits"))
	}
	// Decode into a copy first: a malformed answer must leave rec as it was.
	next := *rec
	r.changed(mask, &next, ev)
	if r.err == nil && r.off != len(b) {
		r.err = errors.New("trailing bytes")
	}
	if r.err != nil {
		return core.Transition{}, malformed(r.err)
	}
	*rec = next
	return res, nil
}

// changed reads the fields mask names into next, in the ABI's order (see
// appendChanged); a read past the end sets r.err.
func (r *reader) changed(mask uint32, next *core.Record, ev *core.Event) {
	if mask&ChangedScope != 0 {
		next.Scope.Tenant = r.strCopy()
		next.Scope.Principal = r.strCopy()
		next.Scope.UseCase = r.strCopy()
		next.Scope.Key = r.strCopy()
	}
	if mask&ChangedStatus != 0 {
		next.Status = core.Status(r.u8())
	}
	if mask&ChangedFingerprint != 0 {
		copy(next.Fingerprint[:], r.take(core.FingerprintBytes))
	}
	if mask&ChangedToken != 0 {
		next.Token = core.Token(r.u64())
	}
	if mask&ChangedVersion != 0 {
		next.Version = r.u64()
	}
	if mask&ChangedResponse != 0 {
		switch r.u8() {
		case ResponseCleared:
			next.Response = core.Response{}
		case ResponseFromEvent:
			next.Response = ev.Response
		case ResponseExplicit:
			r.responseCopy(&next.Response)
		default:
			r.fail(errors.New("unknown response tag"))
		}
	}
	if mask&ChangedLastErrorCode != 0 {
		next.LastErrorCode = core.ErrorCode(r.strCopy())
	}
	loc := ev.Now.Location()
	if mask&ChangedLockedUntil != 0 {
		next.LockedUntil = r.answerTime(loc)
	}
	if mask&ChangedReconcileAfter != 0 {
		next.ReconcileAfter = r.answerTime(loc)
	}
	if mask&ChangedReconcileAttempts != 0 {
		next.ReconcileAttempts = r.u32()
	}
	if mask&ChangedCreatedAt != 0 {
		next.CreatedAt = r.answerTime(loc)
	}
	if mask&ChangedCompletedAt != 0 {
		next.CompletedAt = r.answerTime(loc)
	}
	if mask&ChangedExpiresAt != 0 {
		next.ExpiresAt = r.answerTime(loc)
	}
}

// refused reads the rest of a refused answer (after its status byte): the
// rebuilt error, its message the host's own copy, or a malformed answer.
func (r *reader) refused() error {
	sentinel, msg := r.u8(), r.str()
	if r.err != nil || r.off != len(r.b) {
		return malformed(r.err)
	}
	return ErrorOf(sentinel, strings.Clone(msg))
}

func malformed(err error) error {
	if err == nil {
		err = errors.New("trailing bytes")
	}
	return errors.Join(ErrMalformedAnswer, err)
}

func (r *reader) strCopy() string { return strings.Clone(r.str()) }

func (r *reader) answerTime(nowLoc *time.Location) time.Time {
	switch tag := r.u8(); tag {
	case TimeZero:
		return time.Time{}
	case TimeInstant, TimeFromNow:
		sec := int64(r.u64())
		nsec := r.u32()
		if nsec >= 1e9 {
			r.fail(errors.New("nanoseconds out of range"))
		}
		t := time.Unix(sec, int64(nsec))
		if tag == TimeFromNow {
			return t.In(nowLoc)
		}
		return t.UTC()
	}
	r.fail(errors.New("unknown time tag"))
	return time.Time{}
}

// responseCopy decodes a response whose slices must outlive the answer buffer.
func (r *reader) responseCopy(resp *core.Response) {
	var empty [1]byte
	var emptyHeaders [1]core.Header
	r.response(resp, &empty, &emptyHeaders)
	for i := range resp.Headers {
		resp.Headers[i].Name = strings.Clone(resp.Headers[i].Name)
		resp.Headers[i].Value = strings.Clone(resp.Headers[i].Value)
	}
	if resp.Body != nil {
		resp.Body = append(make([]byte, 0, len(resp.Body)), resp.Body...)
	}
	if resp.Headers != nil && len(resp.Headers) == 0 {
		resp.Headers = []core.Header{}
	}
}
