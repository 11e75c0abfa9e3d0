package linearizability

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/big"
	"strconv"
	"time"

	"github.com/idemkit/idem/core"
)

// WriteHistory writes h in the JSON Lines format ReadHistory reads: the
// policy line first (if any), then the store lines, then the lifecycle
// lines. Go recorders use it to hand a history to cmd/lincheck, and its
// tests to hold the format to a round trip.
func WriteHistory(w io.Writer, h History) error {
	enc := json.NewEncoder(w)
	if h.Policy != nil {
		if err := enc.Encode(jsonLine{Type: "policy", Policy: jsonPolicyOf(h.Policy)}); err != nil {
			return err
		}
	}
	for i := range h.Store {
		op := &h.Store[i]
		l := jsonLine{Type: "store", Client: op.Client, Call: i64s(op.Call), Return: i64s(op.Return), Ended: op.Ended.String(),
			Scope: jsonScopeOf(op.Scope), Method: op.Kind.String(), ExpectVersion: u64s(op.ExpectVersion),
			ExpectToken: u64s(uint64(op.ExpectToken)), FreshToken: u64s(uint64(op.FreshToken)), Record: jsonRecordOf(&op.Record)}
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	for i := range h.Lifecycle {
		op := &h.Lifecycle[i]
		l := jsonLine{Type: "lifecycle", Client: op.Client, Call: i64s(op.Call), Return: i64s(op.Return), Ended: op.Ended.String(),
			Scope: jsonScopeOf(op.Scope), Event: jsonEventOf(&op.Event), Before: op.Before.String(),
			Transition: jsonTransitionOf(&op.Transition), Record: jsonRecordOf(&op.Record), WriteKnown: op.WriteKnown}
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return nil
}

func i64s(v int64) string  { return strconv.FormatInt(v, 10) }
func u64s(v uint64) string { return strconv.FormatUint(v, 10) }

// timeString is t in Unix nanoseconds (null for the zero time), for any
// time an i64 of seconds holds.
func timeString(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	n := new(big.Int).Mul(big.NewInt(t.Unix()), big.NewInt(1e9))
	s := n.Add(n, big.NewInt(int64(t.Nanosecond()))).String()
	return &s
}

func jsonScopeOf(s core.Scope) *jsonScope {
	return &jsonScope{Tenant: s.Tenant, Principal: s.Principal, UseCase: s.UseCase, Key: s.Key}
}

func jsonResponseOf(r *core.Response) jsonResponse {
	out := jsonResponse{StatusCode: r.StatusCode, SchemaVersion: r.SchemaVersion}
	if r.Headers != nil {
		hs := make([]jsonHeader, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = jsonHeader{h.Name, h.Value}
		}
		out.Headers = &hs
	}
	if r.Body != nil {
		b := base64.StdEncoding.EncodeToString(r.Body)
		out.Body = &b
	}
	return out
}

func jsonRecordOf(r *core.Record) *jsonRecord {
	return &jsonRecord{
		Scope: *jsonScopeOf(r.Scope), Status: r.Status.String(), Fingerprint: hex.EncodeToString(r.Fingerprint[:]),
		Token: u64s(uint64(r.Token)), Version: u64s(r.Version), Response: jsonResponseOf(&r.Response),
		LastErrorCode: string(r.LastErrorCode), LockedUntil: timeString(r.LockedUntil), ReconcileAfter: timeString(r.ReconcileAfter),
		ReconcileAttempts: r.ReconcileAttempts, CreatedAt: timeString(r.CreatedAt), CompletedAt: timeString(r.CompletedAt), ExpiresAt: timeString(r.ExpiresAt),
	}
}

func jsonEventOf(e *core.Event) *jsonEvent {
	return &jsonEvent{Kind: e.Kind.String(), Now: timeString(e.Now), Fingerprint: hex.EncodeToString(e.Fingerprint[:]),
		Token: u64s(uint64(e.Token)), Response: jsonResponseOf(&e.Response), ErrorCode: string(e.ErrorCode), Verdict: e.Verdict.String()}
}

func jsonTransitionOf(t *core.Transition) *jsonTransition {
	return &jsonTransition{Decision: t.Decision.Kind.String(), DecisionToken: u64s(uint64(t.Decision.Token)), RetryAfter: i64s(int64(t.Decision.RetryAfter)),
		Write: t.Write.Kind.String(), ExpectVersion: u64s(t.Write.ExpectVersion), ExpectToken: u64s(uint64(t.Write.ExpectToken))}
}

func jsonPolicyOf(p *core.Policy) *jsonPolicy {
	return &jsonPolicy{
		LeaseDuration: i64s(int64(p.LeaseDuration)), TTL: i64s(int64(p.TTL)), InFlightWait: i64s(int64(p.InFlightWait)),
		InFlightAnswer: uint8(p.InFlightAnswer), RetryAfter: i64s(int64(p.RetryAfter)), Expiry: uint8(p.Expiry), Fail: uint8(p.Fail),
		ReconcileBackoffBase: i64s(int64(p.ReconcileBackoffBase)), ReconcileBackoffMax: i64s(int64(p.ReconcileBackoffMax)),
		ReconcileAttemptsMax: p.ReconcileAttemptsMax, TombstoneRetention: i64s(int64(p.TombstoneRetention)),
		KeyBytesMax: p.KeyBytesMax, RequestBytesMax: p.RequestBytesMax, ResponseBytesMax: p.ResponseBytesMax,
	}
}
