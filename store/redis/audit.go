package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

var _ store.Auditor = (*Store)(nil)

// keyAudit starts the key of a scope's audit trail in its bucket: a list
// of JSON entries, oldest first, which outlives the record (the store
// never deletes it).
const keyAudit = "a:"

func (l *layout) audit(b int, m string) string { return l.bucket[b] + keyAudit + m }

// auditEntry is an Audit as the trail keeps it.
type auditEntry struct {
	At       time.Time `json:"at"`
	Who      string    `json:"who"`
	Why      string    `json:"why"`
	Event    uint8     `json:"event"`
	Verdict  uint8     `json:"verdict"`
	Decision uint8     `json:"decision"`
	Token    uint64    `json:"token"`
	Version  uint64    `json:"version"`
}

// auditAttemptsMax bounds ApplyAudited's load-step-write loop: a record
// that changes under it that often is not one an operator settles.
const auditAttemptsMax = 8

// ApplyAudited loads a.Scope's record, steps ev over it at the store's
// time and writes the result with a in one script, which pushes the
// audit entry only when its precondition holds (store.Auditor). Nothing
// is kept for an event that writes nothing.
func (s *Store) ApplyAudited(ctx context.Context, ev core.Event, p *core.Policy, a *store.Audit, out *store.Applied) error {
	if err := a.Validate(); err != nil {
		return err
	}
	if p == nil {
		return errNilPolicy
	}
	o := s.scoped(a.Scope)
	for range auditAttemptsMax {
		snap, err := s.Load(ctx, a.Scope)
		if err != nil {
			return err
		}
		*out = store.Applied{Before: snap.Record.Status, Record: snap.Record, Now: snap.Now}
		ev.Now = snap.Now
		if out.Transition, err = core.Step(&out.Record, &ev, p); err != nil {
			return err
		}
		mode := modeUpdate
		switch out.Transition.Write.Kind {
		case core.WriteNone:
			return nil
		case core.WriteDelete:
			mode = modeDelete
		case core.WriteInsert:
			return fmt.Errorf("redisstore: audit: %v inserts a record: %w", ev.Kind, store.ErrRejected)
		}
		if !store.Audited(a, out) {
			return nil
		}
		written, err := s.writeAudited(ctx, o, mode, out, a)
		if err != nil || written {
			return err
		}
	}
	return fmt.Errorf("redisstore: audit: the record of %s changed %d times under it: %w", a.Scope, auditAttemptsMax, store.ErrConflict)
}

// writeAudited writes out's record (or deletes it) under its write's
// precondition, with a's entry; written is false when the precondition
// failed (nothing was written, nothing kept).
func (s *Store) writeAudited(ctx context.Context, o *scoped, mode string, out *store.Applied, a *store.Audit) (written bool, err error) {
	entry, err := json.Marshal(auditEntry{At: a.At, Who: a.Who, Why: a.Why, Event: uint8(a.Event), Verdict: uint8(a.Verdict),
		Decision: uint8(a.Decision), Token: uint64(a.Token), Version: a.Version})
	if err != nil {
		return false, err
	}
	var e encoded
	if mode != modeDelete {
		e = encode(&out.Record)
	}
	keys := append(o.keys[:scopeKeyCount:scopeKeyCount], s.l.audit(o.b, o.m))
	w := out.Transition.Write
	args := evalArgs(s.scripts.write, keys, encodedArgs+1, mode, o.m, o.payload, o.b,
		strconv.FormatUint(w.ExpectVersion, 10), strconv.FormatUint(uint64(w.ExpectToken), 16))
	v, err := s.eval(ctx, "audit", s.scripts.write, append(e.appendArgs(args), string(entry)))
	if err != nil {
		return false, err
	}
	r, ok := parseReply(v)
	switch {
	case !ok:
		return false, fmt.Errorf("redisstore: audit: the script answered %v: %w", v, core.ErrInvalidRecord)
	case !r.written:
		return false, nil
	case mode != modeDelete:
		return true, o.stored(&r, &out.Record)
	}
	return true, nil
}

// Audits returns scope's audit trail, oldest first (store.Auditor).
func (s *Store) Audits(ctx context.Context, scope core.Scope) ([]store.Audit, error) {
	o := s.scoped(scope)
	raw, err := s.client.LRange(ctx, s.l.audit(o.b, o.m), 0, -1).Result()
	if err != nil {
		return nil, classify(ctx, "audits", err)
	}
	trail := make([]store.Audit, len(raw))
	for i, v := range raw {
		var e auditEntry
		if err := json.Unmarshal([]byte(v), &e); err != nil {
			return nil, invalid(scope, "an audit entry that is not one: "+err.Error())
		}
		trail[i] = store.Audit{Scope: scope, Who: e.Who, Why: e.Why, Event: core.EventKind(e.Event), Verdict: core.Verdict(e.Verdict),
			Decision: core.DecisionKind(e.Decision), Token: core.Token(e.Token), At: e.At, Version: e.Version}
	}
	return trail, nil
}
