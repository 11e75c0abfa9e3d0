package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// A decision is one script call when the driver knows the record it will
// write over: a reserve of a new key (the record is absent), or the
// executor's completion, failure or mark unknown of the attempt it holds
// (store.HeldApplier). The script must then compute what only the server
// knows at that instant, its clock and for a reserve the token, while the
// core stays the only authority on which fields depend on the clock and
// how. So the driver asks it, by stepping the same record and event at two
// instants, templateT and templateT+templateShift: a time equal in both is
// sent as it is, one that moved by exactly the shift is the script's clock
// plus an offset. Once the script has run, the driver steps again at the
// script's time (and token) and compares what the script wrote with that
// step, field by field; any difference is a driver bug (an error, never a
// silent success). Only events whose step uses the time as a value, never
// in a comparison, are templated (store.TimeAsValue): the two steps then
// decide as any other instant would. Every other decision, and one whose
// template's
// precondition failed, steps the snapshot a script returned (a load, or
// the record a failed precondition found) and writes the result under its
// precondition, as store.Op does.
var templateT = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

const templateShift = 1000*time.Hour + 7*time.Microsecond + 3*time.Nanosecond

// templateToken stands for the fresh token in a reserve's template: any
// non-zero token is fresh for an absent record.
const templateToken core.Token = 1

// conflictsMax bounds how often one decision steps again after losing a
// precondition: each loss means another writer made progress.
const conflictsMax = 64

// writeModes are the write script's modes of the core's writes.
var writeModes = map[core.WriteKind]string{core.WriteInsert: modeInsert, core.WriteUpdate: modeUpdate, core.WriteDelete: modeDelete}

var errContention = errors.New("redisstore: too many concurrent writes to one scope")

// template is the core's step of before by ev as the write script takes it;
// ok is false when the step cannot be sent so (the two instants disagree).
// An error is the core refusing the event.
func template(before *core.Record, ev core.Event, p *core.Policy) (e encoded, tr core.Transition, ok bool, err error) {
	if ev.Kind == core.EventReserve {
		ev.Token = templateToken
	}
	at, later := *before, *before
	ev.Now = templateT
	if tr, err = core.Step(&at, &ev, p); err != nil {
		return e, tr, false, err
	}
	ev.Now = templateT.Add(templateShift)
	if tr2, err := core.Step(&later, &ev, p); err != nil || tr2 != tr {
		return e, tr, false, nil
	}
	e = encodeFields(&at)
	if ev.Kind == core.EventReserve {
		if at.Token != templateToken {
			return e, tr, false, nil
		}
		e.token = ""
	}
	a, b := recordTimes(&at), recordTimes(&later)
	for i := range a {
		switch {
		case a[i].Equal(*b[i]):
			if !a[i].IsZero() {
				e.times[i] = timeSpec("=", *a[i])
			}
		case b[i].Sub(*a[i]) == templateShift:
			e.times[i] = offsetSpec("+", a[i].Sub(templateT))
		default:
			return e, tr, false, nil
		}
	}
	return e, tr, true, nil
}

// checked steps before by ev at the script's time (and for a reserve its
// token), fills out from that step, and compares it with what the script
// wrote.
func (o *scoped) checked(before *core.Record, ev core.Event, p *core.Policy, r *reply, out *store.Applied) error {
	ev.Now = r.now
	if ev.Kind == core.EventReserve {
		ev.Token = token(r.counter, o.b)
	}
	*out = store.Applied{Before: before.Status, Record: *before, Now: r.now}
	tr, err := core.Step(&out.Record, &ev, p)
	if err != nil {
		return fmt.Errorf("redisstore: driver bug: the core refused at the script's time a step it took as a template: %w", err)
	}
	out.Transition = tr
	return o.stored(r, &out.Record)
}

// Apply implements store.Applier. A reserve of a new key is one script
// call, and so is a reserve that needs no write (a replay, a key in flight,
// a mismatch); one that writes over a record costs one more. Other events
// load, step and write: two.
func (s *Store) Apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p == nil {
		return errNilPolicy
	}
	o := s.scoped(scope)
	if ev.Kind == core.EventReserve {
		absent := core.Record{Scope: scope}
		e, tr, ok, err := template(&absent, ev, p)
		if err != nil {
			return err
		}
		if ok && tr.Write.Kind == core.WriteInsert {
			return s.applyTemplate(ctx, o, &absent, ev, p, modeInsert, &e, &tr, out)
		}
	}
	mode := modeRead // no token: only a reserve uses one
	if ev.Kind == core.EventReserve {
		mode = modeLoad
	}
	r, err := s.write(ctx, mode, o, mode, 0, 0, &encoded{})
	if err != nil {
		return err
	}
	return s.stepFrom(ctx, o, r, ev, p, out)
}

// ApplyHeld implements store.HeldApplier: a complete, fail or mark unknown
// of the attempt the caller holds is one script call under held's version
// and token. When the record is no longer the one held, the script writes
// nothing and returns the record it found, which the event is then
// stepped over (one more call).
func (s *Store) ApplyHeld(ctx context.Context, held *core.Record, ev core.Event, p *core.Policy, out *store.Applied) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case held == nil:
		return errNilRecord
	case p == nil:
		return errNilPolicy
	}
	before := *held // out may be the caller's held record
	if store.TimeAsValue(&ev, &before) {
		e, tr, ok, err := template(&before, ev, p)
		if err != nil && !store.DriverBug(err) {
			return err
		}
		if err == nil && ok && tr.Write.Kind == core.WriteUpdate {
			return s.applyTemplate(ctx, s.scoped(before.Scope), &before, ev, p, modeUpdate, &e, &tr, out)
		}
	}
	return s.Apply(ctx, before.Scope, ev, p, out)
}

func (s *Store) applyTemplate(ctx context.Context, o *scoped, before *core.Record, ev core.Event, p *core.Policy, mode string, e *encoded, tr *core.Transition, out *store.Applied) error {
	r, err := s.write(ctx, ev.Kind.String(), o, mode, tr.Write.ExpectVersion, tr.Write.ExpectToken, e)
	if err != nil {
		return err
	}
	if r.written {
		return o.checked(before, ev, p, &r, out)
	}
	return s.stepFrom(ctx, o, r, ev, p, out)
}

// stepFrom steps ev over the snapshot r and writes the result under its
// precondition; on a failed precondition, the script's reply is the next
// snapshot. A reserve over a snapshot without a fresh token (a failed
// precondition takes none, so that a replay writes nothing, not even a
// counter) is stepped with a stand-in token, fresh for that record only:
// when the core writes nothing (a replay, a key in flight, a mismatch) the
// token was never used and the answer stands; when it would write, the
// record is loaded again with a token the counter handed out (one more
// call, for a retry after a failure or a key reused after expiry).
func (s *Store) stepFrom(ctx context.Context, o *scoped, r reply, ev core.Event, p *core.Policy, out *store.Applied) error {
	for range conflictsMax {
		snap, err := o.snapshot(&r)
		if err != nil {
			return err
		}
		standIn := ev.Kind == core.EventReserve && snap.FreshToken == 0
		tr, err := stepSnapshot(&snap, ev, p, standIn, out)
		if err != nil {
			return err
		}
		mode := writeModes[tr.Write.Kind]
		switch {
		case mode == "":
			return nil
		case standIn:
			r, err = s.write(ctx, modeLoad, o, modeLoad, 0, 0, &encoded{})
		default:
			r, err = s.writeRecord(ctx, o, mode, &out.Record, tr.Write.ExpectVersion, tr.Write.ExpectToken)
			if err == nil {
				return nil
			}
			if errors.Is(err, store.ErrConflict) {
				err = nil
			}
		}
		if err != nil {
			return err
		}
	}
	return errContention
}

// stepSnapshot steps ev over snap into out, at the snapshot's time and,
// for a reserve, with its fresh token (or a stand-in above the record's).
func stepSnapshot(snap *store.Snapshot, ev core.Event, p *core.Policy, standIn bool, out *store.Applied) (core.Transition, error) {
	ev.Now = snap.Now
	if ev.Kind == core.EventReserve {
		ev.Token = snap.FreshToken
		if standIn {
			ev.Token = snap.Record.Token + 1
		}
	}
	*out = store.Applied{Before: snap.Record.Status, Record: snap.Record, Now: snap.Now}
	tr, err := core.Step(&out.Record, &ev, p)
	if err != nil {
		if store.DriverBug(err) {
			return tr, fmt.Errorf("redisstore: %v: %w", ev.Kind, err)
		}
		return tr, err
	}
	out.Transition = tr
	return tr, nil
}
