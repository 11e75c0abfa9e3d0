package sim

import (
	"fmt"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/refmodel"
	"github.com/idemkit/idem/store"
)

// lifeChecker holds the store's reads and writes to the lifecycle rules of
// SPEC §5 and to the seed's drawn policy (invariant 8), and the store to
// its contract (invariant 0: a read gives back what was last written; a
// write applies only where its precondition held).
//
// The table's answer to each event, and the record it leaves, are the
// reference model's (internal/refmodel), never package core's: not
// core.Step, not the policy's helpers, not core.Response.Equal. A bug
// planted in the core would otherwise be planted in its checker too; the
// model is the second reading of the table that core's own property test
// holds the core to. What it holds a write against is the world's shadow
// of the store (the record the store's applied writes left), not what the
// writer loaded.
type lifeChecker struct {
	w *world
	// stillUnknown counts, per scope, the reconciler's "still unknown"
	// answers the store applied since the record last became unknown:
	// the attempts its record must show, counted here, not by the core.
	stillUnknown []uint32
	// step is the model's outcome for the event being checked. decided
	// keeps a fast-path Apply's for the write it made (pending), so that
	// written holds that write to it without stepping the model again.
	step modelStep
}

// modelStep is the model's outcome for one event, whose token (as the
// model took it) was token.
type modelStep struct {
	pending bool
	token   core.Token
	out     refmodel.Outcome
}

func (l *lifeChecker) init(w *world) {
	l.w = w
	l.stillUnknown = make([]uint32, 0, w.cfg.Requests)
}

// findingSeen is what a reconciler's Check found about one attempt, as the
// Resolve the reconciler applies next must record it: the verdict, or
// "still unknown" for a Check that erred or answered something that cannot
// be stored.
type findingSeen struct {
	set      bool
	scope    int32
	token    core.Token
	verdict  core.Verdict
	response core.Response
}

// writeSeen is one write the store applied, with what the checker knows
// of the event behind it. It holds copies of the record written and of the
// event, not the writer's: the checker steps the model on them, and a
// pointer to the writer's would make them escape to the heap on every
// write.
type writeSeen struct {
	m      *opMeta
	scope  int32
	prev   *core.Record // the shadow before the write
	after  core.Record  // the record written; status absent for a delete
	kind   core.WriteKind
	expect core.Write // the precondition (ExpectVersion is known on the fast path and for compare-and-set)
	ev     core.Event // the event, on the fast path; kind EventInvalid when only the caller is known
	now    time.Time  // the store's time the event was applied at
}

// known is the event behind x if the store told it (the fast path), else nil.
func (x *writeSeen) known() *core.Event {
	if x.ev.Kind == core.EventInvalid {
		return nil
	}
	return &x.ev
}

// eventKind is the event behind x: the fast path's, else what the caller
// applies (servers name it; the sweeper only sweeps, the reconciler only
// resolves). EventInvalid: unknown (a live run's servers share one caller).
func (x *writeSeen) eventKind() core.EventKind {
	if x.ev.Kind != core.EventInvalid {
		return x.ev.Kind
	}
	switch x.m.actor {
	case ActorSweeper:
		return core.EventSweep
	case ActorReconciler:
		return core.EventResolve
	case ActorServer, ActorOperator:
		return x.m.event
	}
	return core.EventInvalid
}

func (l *lifeChecker) fail(inv int, scope int32, format string, args ...any) {
	if !l.w.stopped {
		l.w.check.fail(inv, scope, format, args...)
	}
}

// counter is scope's still-unknown count, growing the slice as scopes appear.
func (l *lifeChecker) counter(scope int32) *uint32 {
	for int(scope) >= len(l.stillUnknown) {
		l.stillUnknown = append(l.stillUnknown, 0)
	}
	return &l.stillUnknown[scope]
}

// givenUp reports whether the unknown record rec of scope was left to an
// operator as the policy says: no longer scheduled, after at least the
// policy's maximum of "still unknown" answers since it became unknown.
func (l *lifeChecker) givenUp(scope int32, rec *core.Record) bool {
	max := l.w.policy.ReconcileAttemptsMax
	return rec.ReconcileAfter.IsZero() && rec.ReconcileAttempts >= max && *l.counter(scope) >= max
}

// loaded holds a record the store returned (Load, Due) to the shadow: a
// store gives back exactly what was last written.
func (l *lifeChecker) loaded(how string, rec *core.Record) {
	w := l.w
	scope, ok := w.scopeIndex(rec.Scope)
	if !ok || w.stopped {
		return
	}
	if d := recordDiff(&w.shadow[scope], rec); d != "" {
		l.fail(0, scope, "%s gave back a record that differs from the last one written: %s", how, d)
	}
}

// due holds one record a Due of kind listed: a read (loaded), and listed
// only if due. The sweeper's are in_progress, completed, failed_retryable
// or expired; the reconciler's are unknown and scheduled (a record given
// up to an operator is never listed again).
func (l *lifeChecker) due(kind store.DueKind, rec *core.Record) {
	w := l.w
	scope, ok := w.scopeIndex(rec.Scope)
	if !ok || w.stopped {
		return
	}
	l.loaded("Due", rec)
	s := &w.shadow[scope]
	switch kind {
	case store.DueReconcile:
		if s.Status != core.StatusUnknown || s.ReconcileAfter.IsZero() {
			l.fail(invLifecycle, scope, "Due listed a %v record with reconcile_after %v for the reconciler (only scheduled unknown records are due)", s.Status, fmtStamp(s.ReconcileAfter))
		}
	case store.DueSweep:
		switch s.Status {
		case core.StatusInProgress, core.StatusCompleted, core.StatusFailedRetryable, core.StatusExpired:
		default:
			l.fail(invLifecycle, scope, "Due listed a %v record for the sweeper", s.Status)
		}
	}
}

// written holds one applied write to the rules: the store's contract, the
// version and the record's shape, whatever the event behind it; and when
// the event is known, the record the table leaves for it (the reference
// model), with the seed's policy.
func (l *lifeChecker) written(x *writeSeen) {
	fast := x.known() != nil && l.step.pending // decided stepped the model for it
	l.step.pending = false
	if l.w.stopped || x.scope < 0 || !l.wellFormed(x) {
		return
	}
	prev, after := x.prev, &x.after
	if after.Status == core.StatusUnknown && prev.Status != core.StatusUnknown {
		*l.counter(x.scope) = 0
	}
	kind := x.eventKind()
	if kind == core.EventInvalid || x.now.IsZero() {
		return // a live run's server: the event and its time are not known
	}
	if kind == core.EventResolve && prev.Status == core.StatusUnknown && after.Status == core.StatusUnknown {
		*l.counter(x.scope)++
	}
	if !fast {
		ev := eventOf(x.m, x.scope, kind, x.known(), x.now, prev, after)
		refmodel.Step(&l.step.out, prev, &ev, &l.w.policy)
		l.step.token = ev.Token
	}
	if why := heldTo(&l.step.out, x); why != "" {
		l.fail(invLifecycle, x.scope, "%v of token %d wrote %v -> %v (%v): %s", kind, l.step.token, prev.Status, after.Status, x.kind, why)
	}
}

// wellFormed holds x to what every write must be, whatever its event: a
// write applied only where its precondition held (invariant 0), the
// version 1 on insert and one more on every update, and a record of its
// status's shape. It reports whether x passed.
func (l *lifeChecker) wellFormed(x *writeSeen) bool {
	prev, after := x.prev, &x.after
	switch x.kind {
	case core.WriteInsert:
		if prev.Exists() {
			l.fail(0, x.scope, "an insert applied over a %v record", prev.Status)
			return false
		}
		if after.Version != 1 {
			l.fail(invLifecycle, x.scope, "an inserted record has version %d, want 1", after.Version)
			return false
		}
	case core.WriteUpdate, core.WriteDelete:
		if !prev.Exists() || prev.Token != x.expect.ExpectToken || prev.Version != x.expect.ExpectVersion {
			l.fail(0, x.scope, "a %v expecting version %d and token %d applied to a %v record at version %d, token %d",
				x.kind, x.expect.ExpectVersion, x.expect.ExpectToken, prev.Status, prev.Version, prev.Token)
			return false
		}
		if x.kind == core.WriteUpdate && after.Version != prev.Version+1 {
			l.fail(invLifecycle, x.scope, "an update wrote version %d over version %d: each write bumps it by one (%s over %s)", after.Version, prev.Version, describeRecord(after), describeRecord(prev))
			return false
		}
	}
	if d := shapeDiff(after); d != "" {
		l.fail(invLifecycle, x.scope, "a write left a %v record %s", after.Status, d)
		return false
	}
	return true
}

// heldTo is what is wrong with the write x by want, what the table makes
// of its event; "" when nothing is.
func heldTo(want *refmodel.Outcome, x *writeSeen) string {
	switch {
	case want.Refusal != "":
		return "the table refuses the event (" + want.Refusal + ")"
	case want.Write.Kind != x.kind:
		return fmt.Sprintf("the table answers %v and writes %v", want.Decision.Kind, want.Write.Kind)
	}
	if f := refmodel.Diff(&want.Record, &x.after); f != "" {
		return "its " + f + " is not the table's: want " + describeRecord(&want.Record) + ", wrote " + describeRecord(&x.after)
	}
	return ""
}

// decided holds the fast path's Apply of ev by the caller m on prev (the
// shadow before it) to the table: its decision, with the retry hint a
// client or the reconciler is given, and that it wrote where the table
// writes (what it wrote, written holds).
func (l *lifeChecker) decided(m *opMeta, scope int32, prev *core.Record, ev *core.Event, a *store.Applied) {
	if l.w.stopped {
		return
	}
	e := eventOf(m, scope, ev.Kind, ev, a.Now, prev, &a.Record)
	want := &l.step.out
	refmodel.Step(want, prev, &e, &l.w.policy)
	l.step.pending, l.step.token = a.Transition.Write.Kind != core.WriteNone, e.Token
	got, why := a.Transition, ""
	switch {
	case want.Refusal != "":
		why = "the table refuses it (" + want.Refusal + ")"
	case got.Decision != want.Decision:
		why = "answered " + got.Decision.Describe() + ", the table " + want.Decision.Describe()
	case got.Write.Kind == core.WriteNone && want.Write.Kind != core.WriteNone:
		why = fmt.Sprintf("it wrote nothing, where the table answers %v and writes %v", want.Decision.Kind, want.Write.Kind)
	}
	if why != "" {
		l.fail(invLifecycle, scope, "%v of token %d on a %v record (token %d) at %s: %s", ev.Kind, e.Token, prev.Status, prev.Token, fmtStamp(a.Now), why)
	}
}

// shapeDiff is what is wrong with the shape of a stored record: only a
// completed record holds a response (a tombstone keeps only what detects
// key reuse), and a stored record has a token and a version.
func shapeDiff(r *core.Record) string {
	if !r.Exists() {
		return ""
	}
	hasResponse := r.Response.StatusCode != 0 || len(r.Response.Headers) > 0 || len(r.Response.Body) > 0
	switch {
	case r.Token == 0 || r.Version == 0:
		return "without a token or a version"
	case r.Status == core.StatusCompleted && r.Response.StatusCode == 0:
		return "without its response"
	case r.Status != core.StatusCompleted && hasResponse:
		return "with a response (only a completed record keeps one)"
	}
	return ""
}

// recordDiff names the first field in which got differs from want, with
// both records, or "".
func recordDiff(want, got *core.Record) string {
	if f := refmodel.Diff(want, got); f != "" {
		return f + " (written " + describeRecord(want) + ", read " + describeRecord(got) + ")"
	}
	return ""
}

// fmtStamp is a store time as the trace shows times: seconds since the
// run's start ("zero" for the zero time).
func fmtStamp(t time.Time) string {
	if t.IsZero() {
		return "zero"
	}
	return fmtTime(t.Sub(epoch).Nanoseconds())
}

// describeRecord is rec for a violation's detail, its times as the trace
// shows them.
func describeRecord(r *core.Record) string {
	return fmt.Sprintf("%v token %d v%d attempts %d locked_until %s reconcile_after %s created %s completed %s expires %s error %q response %d/%dB",
		r.Status, r.Token, r.Version, r.ReconcileAttempts, fmtStamp(r.LockedUntil), fmtStamp(r.ReconcileAfter),
		fmtStamp(r.CreatedAt), fmtStamp(r.CompletedAt), fmtStamp(r.ExpiresAt), r.LastErrorCode, r.Response.StatusCode, len(r.Response.Body))
}

// recorded holds a server's answer to Result.Recorded's contract: true
// only if the store, after the attempt's Complete, held that completion.
func (l *lifeChecker) recorded(scope int32, m *opMeta, f *idem.Flow) {
	r, err := f.Result()
	if err == nil && r.Kind == idem.ResultExecuted && r.Recorded && m.event == core.EventComplete && !m.holdsCompletion {
		l.fail(invLifecycle, scope, "the result of attempt %d says its outcome was recorded, but its Complete left the store without that completion", m.attempt)
	}
}
