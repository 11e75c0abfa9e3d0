package sim

// The baselines: every anti-pattern of the seed documents that the checkers
// must catch, each whole in one place. The correct baseline is the real
// executor; each other one changes it in exactly the ways described here.

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// Baseline is how the servers use the store: the correct executor, or one of
// the anti-patterns of the seed documents that the checkers must catch.
type Baseline uint8

const (
	BaselineCorrect        Baseline = iota // the real executor over the real core
	BaselineNaive                          // remember the key only after executing it
	BaselineNoFingerprint                  // compare keys only, never the payload
	BaselineEvictUnknown                   // take a timeout for "did not execute" and free the key
	BaselineLeaseReexecute                 // run the action again once a lease expired
	BaselineNoFencing                      // write an outcome without checking the token owns the record
	baselineCount
)

var baselineNames = [baselineCount]string{"correct", "naive", "no-fingerprint", "evict-unknown", "lease-reexecute", "no-fencing"}

func (b Baseline) String() string {
	if b < baselineCount {
		return baselineNames[b]
	}
	return fmt.Sprintf("baseline(%d)", uint8(b))
}

// Baselines lists every baseline, the correct one first.
func Baselines() []Baseline {
	bs := make([]Baseline, baselineCount)
	for i := range bs {
		bs[i] = Baseline(i)
	}
	return bs
}

// ParseBaseline reads a baseline name.
func ParseBaseline(name string) (Baseline, error) {
	for b, n := range baselineNames {
		if n == name {
			return Baseline(b), nil
		}
	}
	return 0, fmt.Errorf("unknown baseline %q (known: %s)", name, strings.Join(baselineNames[:], ", "))
}

// casOnly reports whether the baseline works on load and compare-and-set
// only: naive loads and inserts by hand, and lease-reexecute changes what a
// load shows. Their seeds never take the fast path.
func (b Baseline) casOnly() bool { return b == BaselineNaive || b == BaselineLeaseReexecute }

// --- naive: remember the key only after executing it.

// naive is the seed's bad example: look the key up, and if it was not done,
// execute, then remember the key. No reservation, no lease, no fencing.
func (s *server) naive(epoch int, att *attempt) {
	w := s.w
	req := att.req
	meta := &opMeta{actor: ActorServer, actorID: s.id, scope: req.scope, event: core.EventReserve}
	st := w.store.view(meta)
	s.at(epoch, w.storeLatency(), func() {
		snap, err := st.Load(context.Background(), req.key)
		if err != nil {
			w.sendAnswer(s, att, answer{status: http.StatusServiceUnavailable})
			return
		}
		if snap.Record.Status == core.StatusCompleted {
			w.sendAnswer(s, att, answer{status: snap.Record.Response.StatusCode, definitive: true, response: snap.Record.Response, kind: idem.ResultReplayed, token: snap.Record.Token})
			return
		}
		w.check.gatewayCall(req.scope, snap.FreshToken)
		w.log(TraceEvent{Scope: req.scope, Actor: ActorServer, ActorID: s.id, What: WhatGatewayCall, Token: snap.FreshToken})
		w.after(w.netLatency(), func() {
			res := w.gateway.handle(w, req.scope, req, snap.FreshToken, w.Time().Add(w.policy.TTL))
			s.at(epoch, w.gatewayLatency()+w.netLatency(), func() {
				resp := res.charge.response()
				rec := core.Record{
					Scope: req.key, Status: core.StatusCompleted, Fingerprint: req.fp, Token: snap.FreshToken, Version: 1,
					Response: resp, CreatedAt: w.Time(), CompletedAt: w.Time(), ExpiresAt: w.Time().Add(w.policy.TTL),
				}
				s.at(epoch, w.storeLatency(), func() {
					_ = st.Insert(context.Background(), &rec)
					w.sendAnswer(s, att, answer{status: resp.StatusCode, definitive: true, response: resp, kind: idem.ResultExecuted, token: rec.Token})
				})
			})
		})
	})
}

// --- no-fingerprint: compare keys only, never the payload.

// requestFingerprint is the fingerprint a server sends with req: the
// payload's, or under no-fingerprint the key's alone.
func (w *world) requestFingerprint(req *request) core.Fingerprint {
	if w.cfg.Baseline == BaselineNoFingerprint {
		return sha256.Sum256([]byte(req.key.Key))
	}
	return req.fp
}

// comparesFingerprints is false for no-fingerprint, whose records carry the
// key's fingerprint: the checker cannot hold a record's fingerprint against
// the payload's there (invariant 3 is then caught by the answers clients see).
func (b Baseline) comparesFingerprints() bool { return b != BaselineNoFingerprint }

// --- evict-unknown: take a timeout for "did not execute" and free the key.

// actionError is what a server reports of an action that ended with err, as
// how (actionCompleted, actionNotExecuted, actionUnknown).
func (w *world) actionError(err error, how int64) error {
	if w.cfg.Baseline == BaselineEvictUnknown && how == actionUnknown {
		return idem.NotExecuted(err) // the anti-pattern: a timeout taken for "did not happen"
	}
	return err
}

// --- lease-reexecute: run the action again once a lease expired.

// storeView is the store as the baseline sees it. lease-reexecute's view
// shows a record whose lease expired as failed_retryable, so that the core
// hands the key to a new attempt: the anti-pattern of re-running on lease
// expiry. The view hides the fast path, so that every load goes through it.
func (w *world) storeView(s store.Store) store.Store {
	if w.cfg.Baseline == BaselineLeaseReexecute {
		return store.Wrap(store.Layer{Outer: leaseReexecuteView{s}, Inner: s})
	}
	return s
}

type leaseReexecuteView struct{ store.Store }

func (v leaseReexecuteView) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	snap, err := v.Store.Load(ctx, scope)
	r := &snap.Record
	expired := r.Status == core.StatusInProgress && !snap.Now.Before(r.LockedUntil)
	if err == nil && (expired || r.Status == core.StatusUnknown && r.LastErrorCode == core.ErrorCodeLeaseExpired) {
		r.Status = core.StatusFailedRetryable
	}
	return snap, err
}

// --- no-fencing: write an outcome without checking the token owns the record.

// ownerEvent is the event a server applies for its attempt. Under
// no-fencing an owner's event carries whichever token owns the record now
// (read from the world's shadow of the store, which changes nothing): the
// anti-pattern of writing the outcome without the check.
func (w *world) ownerEvent(scope int32, ev core.Event) core.Event {
	if w.cfg.Baseline == BaselineNoFencing && ev.Kind != core.EventReserve {
		if t := w.shadow[scope].Token; t != 0 {
			ev.Token = t
		}
	}
	return ev
}
