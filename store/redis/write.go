package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// scoped is a scope with what the scripts need of it: its member, bucket,
// name on the bucket's channel (notifyPayload) and keys.
type scoped struct {
	sc      core.Scope
	m       string
	b       int
	payload string
	keys    []string
}

func (s *Store) scoped(sc core.Scope) *scoped {
	m := member(&sc)
	h := memberHash(m)
	b := bucketOfHash(h)
	return &scoped{sc: sc, m: m, b: b, payload: notifyPayload(h), keys: s.l.scopeKeys(b, m)}
}

// reply is what the write script answered: whether it wrote, the server's
// time, the counter of the fresh token it took (0: none), and the fields
// it wrote (all but the response), or, when it did not write, the record's
// fields as it found them.
type reply struct {
	written bool
	now     time.Time
	counter uint64
	fields  []any
}

// Modes of the write script.
const (
	modeLoad   = "load" // the record, the time and a fresh token
	modeRead   = "read" // the record and the time
	modeInsert = "insert"
	modeUpdate = "update"
	modeDelete = "delete"
)

// write runs the write script for o in mode, under the precondition
// (expectVersion, expectToken) for an update or a delete, writing e.
func (s *Store) write(ctx context.Context, what string, o *scoped, mode string, expectVersion uint64, expectToken core.Token, e *encoded) (reply, error) {
	a := evalArgs(s.scripts.write, o.keys, encodedArgs, mode, o.m, o.payload, o.b,
		strconv.FormatUint(expectVersion, 10), strconv.FormatUint(uint64(expectToken), 16))
	v, err := s.eval(ctx, what, s.scripts.write, e.appendArgs(a))
	if err != nil {
		return reply{}, err
	}
	r, ok := parseReply(v)
	if !ok {
		return reply{}, fmt.Errorf("redisstore: %s: the script answered %v: %w", what, v, core.ErrInvalidRecord)
	}
	return r, nil
}

func parseReply(v any) (reply, bool) {
	a, ok := v.([]any)
	if !ok || len(a) != 5 {
		return reply{}, false
	}
	var n [4]int64
	for i := range n {
		if n[i], ok = a[i].(int64); !ok || n[i] < 0 {
			return reply{}, false
		}
	}
	fields, ok := a[4].([]any)
	if !ok || n[0] > 1 {
		return reply{}, false
	}
	return reply{written: n[0] == 1, now: clockOf(n[1], n[2]), counter: uint64(n[3]), fields: fields}, true
}

// snapshot is the Load a reply that did not write amounts to: the record,
// the server's time and the fresh token (zero when the script took none),
// all read at one instant.
func (o *scoped) snapshot(r *reply) (store.Snapshot, error) {
	rec, err := decodeRecord(o.sc, r.fields, true)
	if err != nil {
		return store.Snapshot{}, err
	}
	snap := store.Snapshot{Record: rec, Now: r.now}
	if r.counter != 0 {
		snap.FreshToken = token(r.counter, o.b)
	}
	return snap, nil
}

// stored checks that the fields a write reply says it wrote are want's
// (but the response, which the script copies as it is): a difference is a
// driver bug.
func (o *scoped) stored(r *reply, want *core.Record) error {
	got, err := decodeRecord(o.sc, r.fields, false)
	if err != nil {
		return err
	}
	if !sameStored(&got, want) {
		w := *want
		w.Response = core.Response{}
		return fmt.Errorf("redisstore: driver bug: the script wrote for %s\n  got  %s\n  want %s: %w",
			o.sc, got.Describe(), w.Describe(), core.ErrInvalidRecord)
	}
	return nil
}

// sameStored reports whether a and b have the same stored fields but the
// response: the fields encode writes (the due indexes follow from them),
// compared as encode's strings would be, without making them.
// (recordFields stops the build when core.Record gains a field, which
// encode and sameStored must then learn.)
func sameStored(a, b *core.Record) bool {
	if a.Status != b.Status || a.Fingerprint != b.Fingerprint || a.Token != b.Token || a.Version != b.Version ||
		a.LastErrorCode != b.LastErrorCode || a.ReconcileAttempts != b.ReconcileAttempts {
		return false
	}
	ta, tb := recordTimes(a), recordTimes(b)
	for i := range ta {
		if !ta[i].Equal(*tb[i]) {
			return false
		}
	}
	return true
}

// writeRecord writes rec (an insert, or an update or delete under the
// precondition): nil once written, store.ErrConflict (wrapped) when the
// precondition did not hold, with the reply as a snapshot.
func (s *Store) writeRecord(ctx context.Context, o *scoped, mode string, rec *core.Record, expectVersion uint64, expectToken core.Token) (reply, error) {
	var e encoded
	if mode != modeDelete {
		e = encode(rec)
	}
	r, err := s.write(ctx, mode, o, mode, expectVersion, expectToken, &e)
	switch {
	case err != nil:
		return r, err
	case !r.written:
		return r, fmt.Errorf("redisstore: %s: %w", mode, store.ErrConflict)
	case mode != modeDelete:
		return r, o.stored(&r, rec)
	}
	return r, nil
}

// recordFields is core.Record's fields, in its order: the conversion below
// compiles only while they are the same.
type recordFields struct {
	Scope                       core.Scope
	Status                      core.Status
	Fingerprint                 core.Fingerprint
	Token                       core.Token
	Version                     uint64
	Response                    core.Response
	LastErrorCode               core.ErrorCode
	LockedUntil, ReconcileAfter time.Time
	ReconcileAttempts           uint32
	CreatedAt, CompletedAt      time.Time
	ExpiresAt                   time.Time
}

var _ = recordFields(core.Record{})
