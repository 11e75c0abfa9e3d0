package abi

import (
	"errors"
	"strconv"
	"time"
	"unsafe"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/flow"
	"github.com/idemkit/idem/store"
)

// FlowCall is a flow call as the guest decodes it: Call says which of the
// other fields it set. Its strings and slices alias the bytes it was
// decoded from, which a flow keeps (its scope, its record, the response):
// the guest decodes each call from a copy of its input of its own.
type FlowCall struct {
	Call   byte
	Handle uint32

	Config  flow.Config  // FlowBegin
	Request flow.Request // FlowBegin

	Applied store.Applied // FlowApplied, FlowBeaten: when Err is nil
	Err     error         // FlowApplied, FlowBeaten: the store error; FlowRan: the action's; FlowGone: the caller's

	Response core.Response // FlowRan, when Err is nil
	Elapsed  time.Duration // FlowWaited
	Sent     time.Time     // FlowLease, FlowBeaten
	Now      time.Time     // FlowBeaten, FlowLost, FlowBeatTimeout
}

// DecodeFlowCall decodes b, written by one of the Append calls of flow.go,
// into c.
func DecodeFlowCall(b []byte, c *FlowCall) error {
	r := reader{b: b}
	*c = FlowCall{Call: r.c8()}
	if c.Call != FlowBegin {
		c.Handle = r.c32()
	}
	switch c.Call {
	case FlowBegin:
		r.policy(&c.Config.Policy)
		c.Config.OutcomeTimeout = time.Duration(r.c64())
		c.Config.HeartbeatInterval = time.Duration(r.c64())
		r.scope(&c.Request.Scope)
		copy(c.Request.Fingerprint[:], r.take(core.FingerprintBytes))
	case FlowApplied, FlowBeaten:
		r.applied(&c.Applied, &c.Err)
		if c.Call == FlowBeaten {
			c.Sent, c.Now = r.time(time.UTC), r.time(time.UTC)
		}
	case FlowRan:
		r.ran(c)
	case FlowWaited:
		c.Elapsed = time.Duration(r.c64())
	case FlowGone:
		c.Err = r.textError()
	case FlowLease:
		c.Sent = r.time(time.UTC)
	case FlowLost, FlowBeatTimeout:
		c.Now = r.time(time.UTC)
	case FlowEnd:
	default:
		r.fail(errors.New("unknown flow call " + strconv.Itoa(int(c.Call))))
	}
	if r.err == nil && r.off != len(b) {
		r.err = errors.New("trailing bytes")
	}
	if r.err != nil {
		return errors.Join(ErrMalformedRequest, r.err)
	}
	return nil
}

// policyBytes is the fixed size of an encoded policy (appendPolicy).
const policyBytes = 3*8 + 1 + 8 + 2 + 2*8 + 4 + 4*8

// policy reads a policy as one bounds-checked block: its fields are at
// fixed offsets, so each is one load (smaller code, in the module, than a
// checked read per field, and no slower).
func (r *reader) policy(p *core.Policy) {
	b := r.take(policyBytes)
	if b == nil {
		return
	}
	at := func(off int) unsafe.Pointer { return unsafe.Pointer(&b[off]) }
	p.LeaseDuration = time.Duration(load64(at(0)))
	p.TTL = time.Duration(load64(at(8)))
	p.InFlightWait = time.Duration(load64(at(16)))
	p.InFlightAnswer = core.InFlightAnswer(b[24])
	p.RetryAfter = time.Duration(load64(at(25)))
	p.Expiry = core.ExpiryMode(b[33])
	p.Fail = core.FailMode(b[34])
	p.ReconcileBackoffBase = time.Duration(load64(at(35)))
	p.ReconcileBackoffMax = time.Duration(load64(at(43)))
	p.ReconcileAttemptsMax = load32(at(51))
	p.TombstoneRetention = time.Duration(load64(at(55)))
	p.KeyBytesMax = int(int64(load64(at(63))))
	p.RequestBytesMax = int(int64(load64(at(71))))
	p.ResponseBytesMax = int(int64(load64(at(79))))
}

func (r *reader) scope(s *core.Scope) {
	s.Tenant, s.Principal, s.UseCase, s.Key = r.str(), r.str(), r.str(), r.str()
}

// record reads a record, its times in loc; an empty body or header list
// is built on emptyBody and emptyHeaders (see bytesOrNil).
func (r *reader) record(rec *core.Record, loc *time.Location, emptyBody *[1]byte, emptyHeaders *[1]core.Header) {
	r.scope(&rec.Scope)
	rec.Status = core.Status(r.u8())
	copy(rec.Fingerprint[:], r.take(core.FingerprintBytes))
	rec.Token = core.Token(r.u64())
	rec.Version = r.u64()
	r.response(&rec.Response, emptyBody, emptyHeaders)
	rec.LastErrorCode = core.ErrorCode(r.str())
	rec.LockedUntil = r.time(loc)
	rec.ReconcileAfter = r.time(loc)
	rec.ReconcileAttempts = r.u32()
	rec.CreatedAt = r.time(loc)
	rec.CompletedAt = r.time(loc)
	rec.ExpiresAt = r.time(loc)
}

func (r *reader) applied(a *store.Applied, err *error) {
	if r.c8() != 0 {
		*err = r.textError()
		return
	}
	a.Before = core.Status(r.c8())
	r.record(&a.Record, time.UTC, new([1]byte), new([1]core.Header))
	t := &a.Transition // read as ApplyAnswer reads one, with the flow calls' reads
	t.Decision.Kind = core.DecisionKind(r.c8())
	t.Decision.Token = core.Token(r.c64())
	t.Decision.RetryAfter = time.Duration(r.c64())
	t.Write.Kind = core.WriteKind(r.c8())
	t.Write.ExpectVersion = r.c64()
	t.Write.ExpectToken = core.Token(r.c64())
	a.Now = r.time(time.UTC)
}

func (r *reader) ran(c *FlowCall) {
	switch r.c8() {
	case RanResponse:
		r.response(&c.Response, new([1]byte), new([1]core.Header))
	case RanNotExecuted:
		code := r.cstr()
		c.Err = &NotExecutedText{Inner: flow.NotExecutedError{Code: core.ErrorCode(code), Err: errNotExecutedInner}, Message: r.cstr()}
	case RanError:
		e := r.textError()
		if e.Kind == ErrKindPanic {
			c.Err = &flow.PanicError{Value: e.Message}
		} else {
			c.Err = e
		}
	default:
		r.fail(errors.New("unknown ran outcome"))
	}
}

// errNotExecutedInner stands for the error a NotExecutedError wrapped on
// the host: the Flow reads only its code, and the outer error's text.
var errNotExecutedInner = errors.New("idem/wasm: the action did not execute")

// The reads of a flow call: calls, where the step's are inlined. An
// inlined read is a few hundred bytes of the module's code, and a flow's
// calls are fewer than its store calls, which dwarf a call's cost here.

//go:noinline
func (r *reader) c8() uint8 { return r.u8() }

//go:noinline
func (r *reader) c32() uint32 { return r.u32() }

//go:noinline
func (r *reader) c64() uint64 { return r.u64() }

//go:noinline
func (r *reader) cstr() string { return r.str() }
