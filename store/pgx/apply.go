package pgxstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// The one-round-trip writes let SQL compute what only the database knows at
// the statement: its clock, and for a reserve the token. Which record fields
// depend on the clock, and how, is not the driver's to know: the core is the
// only authority. So the driver asks it, by stepping the same record and
// event at two instants, templateT and templateT+templateShift: a time
// field equal in both is a literal, one that moved by exactly the shift is
// the statement's time plus an offset. Then, once the statement has run, it
// steps again at the database's time and checks the row it got back against
// that step, field by field; any difference is a driver bug (an error, never
// a silent success). Only events whose step uses the time as a value, never
// in a comparison, are templated (store.TimeAsValue: reserve of an absent
// record, complete, fail, mark unknown): the two steps then decide the same
// as any other.
var templateT = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

const templateShift = 1000*time.Hour + 7*time.Microsecond

// templateToken stands for the sequence's token in a reserve's template:
// any non-zero token is fresh for an absent record.
const templateToken core.Token = 1

type template struct {
	rec core.Record
	tr  core.Transition
	w   write
}

// newTemplate fills t; ok is false when the step cannot be expressed as one
// statement. An error is the core refusing the event (or a record it could
// not have produced: a driver bug).
func newTemplate(t *template, before *core.Record, ev core.Event, p *core.Policy) (ok bool, err error) {
	if ev.Kind == core.EventReserve {
		ev.Token = templateToken
	}
	t.rec = *before
	ev.Now = templateT
	if t.tr, err = core.Step(&t.rec, &ev, p); err != nil {
		return false, err
	}
	other := *before
	ev.Now = templateT.Add(templateShift)
	tr2, err := core.Step(&other, &ev, p)
	if err != nil || tr2 != t.tr {
		return false, nil
	}
	a := [5]time.Time{t.rec.LockedUntil, t.rec.ReconcileAfter, t.rec.CreatedAt, t.rec.CompletedAt, t.rec.ExpiresAt}
	b := [5]time.Time{other.LockedUntil, other.ReconcileAfter, other.CreatedAt, other.CompletedAt, other.ExpiresAt}
	t.w.rec = &t.rec
	for i := range a {
		switch {
		case a[i].Equal(b[i]):
			t.w.times[i] = literal(a[i])
		case b[i].Sub(a[i]) == templateShift:
			t.w.times[i] = offset(a[i].Sub(templateT))
		default:
			return false, nil
		}
	}
	return true, nil
}

// checked steps before with ev at the database's time (and for a reserve
// the sequence's token) and compares the result with the row the statement
// wrote. It fills out from the step: the core's record, not the row.
func checked(before *core.Record, ev core.Event, p *core.Policy, now time.Time, tok core.Token, got *core.Record, out *store.Applied) error {
	ev.Now = now
	if ev.Kind == core.EventReserve {
		ev.Token = tok
	}
	*out = store.Applied{Before: before.Status, Record: *before, Now: now}
	tr, err := core.Step(&out.Record, &ev, p)
	if err != nil {
		return fmt.Errorf("pgxstore: driver bug: the core refused a step it had accepted as a template: %w", err)
	}
	out.Transition = tr
	if !sameRecord(&out.Record, got) {
		return fmt.Errorf("pgxstore: driver bug: the row written for %v is not core.Step's:\n  row  %s\n  core %s: %w",
			ev.Kind, got.Describe(), out.Record.Describe(), core.ErrInvalidRecord)
	}
	return nil
}

// Apply implements store.Applier. A reserve costs one round trip whether
// it creates the record or finds one that needs no write (a replay, a key
// in flight, a mismatch), except when its first statement guessed wrong
// (readfirst.go: a new key while the driver reads first, a record found
// while it inserts first: one more); a reserve that must change an
// existing record costs one more. Other events load, step and write (two).
func (s *Store) Apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
	return ops{s: s, q: s.pool}.apply(ctx, scope, ev, p, out)
}

// ApplyHeld implements store.HeldApplier: a complete, fail or mark-unknown
// of the attempt the caller holds is one fenced UPDATE, one round trip.
// When the record is no longer the one held (a heartbeat moved it on, or
// another attempt took it), the UPDATE writes nothing and the event is
// applied as Apply would (two more).
func (s *Store) ApplyHeld(ctx context.Context, held *core.Record, ev core.Event, p *core.Policy, out *store.Applied) error {
	return ops{s: s, q: s.pool}.applyHeld(ctx, held, ev, p, out)
}

func (o ops) apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	absent := core.Record{Scope: scope}
	if ev.Kind != core.EventReserve {
		return o.loop(ctx, scope, ev, p, out)
	}
	var t template
	ok, err := newTemplate(&t, &absent, ev, p)
	if err != nil {
		return err
	}
	if !ok || t.tr.Write.Kind != core.WriteInsert {
		return o.loop(ctx, scope, ev, p, out)
	}
	switch o.s.reserveWay() {
	case wayInsert:
		return o.insertFirst(ctx, scope, ev, p, &t.w, out)
	case wayRead:
		var now time.Time
		var r row
		found, err := o.read(ctx, scope, &now, &r)
		if err != nil {
			return err
		}
		o.s.observeReserve(found)
		if found {
			return o.reserveExisting(ctx, scope, ev, p, now, &r, out)
		}
		// absent: insert it (or read what a concurrent insert left)
		return o.insertOrRead(ctx, scope, ev, p, &t.w, false, out)
	}
	return o.insertOrRead(ctx, scope, ev, p, &t.w, true, out)
}

// insertOrRead sends the insert-or-read (reserveSQL) of the reserve's
// write w; observe says whether what it finds feeds the adaptive choice
// (not after a read that did).
func (o ops) insertOrRead(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, w *write, observe bool, out *store.Applied) error {
	var (
		inserted bool
		now      time.Time
		r        row
		v        argv
	)
	args := o.s.sql.reserve.args(w.fill(&v, nil))
	dest := r.dest(append(make([]any, 0, 18), &inserted, &now))
	err := o.run(ctx, func() error { return o.insertRow(ctx, &scope, &o.s.sql.reserve, args, dest) })
	if errors.Is(err, pgx.ErrNoRows) {
		// A concurrent insert won after this statement's snapshot: the
		// record exists but was not visible. Load it (one more round trip).
		return o.loop(ctx, scope, ev, p, out)
	}
	if err != nil {
		return classify(ctx, "reserve", err)
	}
	if observe {
		o.s.observeReserve(!inserted)
	}
	if inserted {
		return checkedInsert(scope, ev, p, now, &r, out)
	}
	return o.reserveExisting(ctx, scope, ev, p, now.UTC(), &r, out)
}

// insertFirst sends the plain insert (insertNewSQL) of the reserve's write
// w, and reads the record when the scope has one (one more round trip).
func (o ops) insertFirst(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, w *write, out *store.Applied) error {
	var (
		now time.Time
		r   row
		v   argv
	)
	args := o.s.sql.insertNew.args(w.fill(&v, nil))
	dest := r.dest(append(make([]any, 0, 17), &now))
	err := o.run(ctx, func() error { return o.insertRow(ctx, &scope, &o.s.sql.insertNew, args, dest) })
	if err == nil {
		o.s.observeReserve(false)
		return checkedInsert(scope, ev, p, now, &r, out)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return classify(ctx, "reserve", err)
	}
	o.s.observeReserve(true)
	found, err := o.read(ctx, scope, &now, &r)
	if err != nil {
		return err
	}
	if !found {
		// Deleted since the insert saw it (a sweep, a prune): start over
		// by load, step and write.
		return o.loop(ctx, scope, ev, p, out)
	}
	return o.reserveExisting(ctx, scope, ev, p, now, &r, out)
}

// checkedInsert checks the row r a reserve's statement inserted at now
// against the core's step of the reserve over the absent record, with the
// token the row got from the sequence.
func checkedInsert(scope core.Scope, ev core.Event, p *core.Policy, now time.Time, r *row, out *store.Applied) error {
	got := core.Record{Scope: scope}
	if err := r.record(&got); err != nil {
		return err
	}
	absent := core.Record{Scope: scope}
	return checked(&absent, ev, p, now.UTC(), got.Token, &got, out)
}

// read is a reserve's plain read of scope's record (Options.ReadFirst, or
// the adaptive choice): found says whether there is one, in r, read at now.
func (o ops) read(ctx context.Context, scope core.Scope, now *time.Time, r *row) (found bool, err error) {
	dest := r.dest(append(make([]any, 0, 17), now))
	err = o.run(ctx, func() error {
		var v argv
		return o.q.QueryRow(ctx, o.s.sql.read.sql, o.s.sql.read.args(v.scope(scope.Tenant, scope.Principal, scope.UseCase, scope.Key))...).Scan(dest...)
	})
	switch {
	case err == nil:
		*now = now.UTC()
		return true, nil
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	}
	return false, classify(ctx, "reserve", err)
}

// reserveExisting steps a reserve over the existing record r, read at now
// without a token.
func (o ops) reserveExisting(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, now time.Time, r *row, out *store.Applied) error {
	got := core.Record{Scope: scope}
	if err := r.record(&got); err != nil {
		return err
	}
	// The record exists, and the statement took no token for it: step it
	// with a stand-in token, fresh for this record only. When the core
	// writes nothing (a replay, a key in flight, a mismatch), the token was
	// never used and the answer stands. When it would write, the write must
	// carry a token the sequence handed out: apply the event by load, step
	// and write instead (two more round trips, for a retry after a failure
	// or an expiry; never for a new key or a replay).
	step := ev
	step.Token, step.Now = got.Token+1, now
	*out = store.Applied{Before: got.Status, Record: got, Now: now}
	tr, err := core.Step(&out.Record, &step, p)
	if err != nil {
		if store.DriverBug(err) {
			return fmt.Errorf("pgxstore: %v: %w", ev.Kind, err)
		}
		return err
	}
	out.Transition = tr
	if tr.Write.Kind == core.WriteNone {
		return nil
	}
	return o.loop(ctx, scope, ev, p, out)
}

func (o ops) applyHeld(ctx context.Context, held *core.Record, ev core.Event, p *core.Policy, out *store.Applied) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	before := *held // out may be the caller's held record
	if store.TimeAsValue(&ev, &before) {
		var t template
		ok, err := newTemplate(&t, &before, ev, p)
		if err != nil && !store.DriverBug(err) {
			return err
		}
		if err == nil && ok && t.tr.Write.Kind == core.WriteUpdate {
			var got core.Record
			now, written, err := o.update(ctx, &t.w, t.tr.Write.ExpectVersion, t.tr.Write.ExpectToken, before.CreatedAt, &got, o.s.opt.unfencedCompletion)
			if err != nil {
				return err
			}
			if written {
				return checked(&before, ev, p, now, 0, &got, out)
			}
			// Not held any more: apply ev to the record as it is.
		}
	}
	return o.loop(ctx, before.Scope, ev, p, out)
}

// loop applies ev by load, step and compare-and-set (store.Op), returning
// the store's error unwrapped: store.Apply names the method.
func (o ops) loop(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, out *store.Applied) error {
	var op store.Op
	op.Reset(scope, ev, p)
	for !op.Done() {
		op.Do(ctx, plain{o})
	}
	a, err := op.Applied()
	if err != nil {
		var se *store.Error
		if errors.As(err, &se) {
			return se.Err
		}
		return err
	}
	*out = *a
	return nil
}
