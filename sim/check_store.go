package sim

import (
	"fmt"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// lifeChecker holds the store's reads and writes to the lifecycle rules of
// SPEC §5 and to the seed's drawn policy (invariant 8), and the store to
// its contract (invariant 0: a read gives back what was last written; a
// write applies only where its precondition held).
//
// It keeps its own small reference of each rule and never asks package
// core what is right: not core.Step, not the policy's helpers, not
// core.Response.Equal. A bug planted in the core would otherwise be planted
// in its checker too. What it holds a write against is the world's shadow of
// the store (the record the store's applied writes left), not what the
// writer loaded.
type lifeChecker struct {
	w *world
	// stillUnknown counts, per scope, the reconciler's "still unknown"
	// answers the store applied since the record last became unknown:
	// the attempts its record must show, counted here, not by the core.
	stillUnknown []uint32
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
// of the event behind it.
type writeSeen struct {
	m      *opMeta
	scope  int32
	prev   *core.Record // the shadow before the write
	after  *core.Record // the record written; status absent for a delete
	kind   core.WriteKind
	expect core.Write  // the precondition (ExpectVersion is known on the fast path and for compare-and-set)
	ev     *core.Event // the event, on the fast path; nil when only the caller is known
	now    time.Time   // the store's time the event was applied at
}

// eventKind is the event behind x: the fast path's, else what the caller
// applies (servers name it; the sweeper only sweeps, the reconciler only
// resolves). EventInvalid: unknown (a live run's servers share one caller).
func (x *writeSeen) eventKind() core.EventKind {
	if x.ev != nil {
		return x.ev.Kind
	}
	switch x.m.actor {
	case ActorSweeper:
		return core.EventSweep
	case ActorReconciler:
		return core.EventResolve
	case ActorServer:
		return x.m.event
	}
	return core.EventInvalid
}

// token is the attempt an owner's event is about (zero when unknown).
func (x *writeSeen) token() core.Token {
	if x.ev != nil {
		return x.ev.Token
	}
	if x.m.actor == ActorServer {
		return x.m.attempt
	}
	return 0
}

// finding is the reconciler's finding behind a Resolve of scope, or nil.
func (x *writeSeen) finding(scope int32) *findingSeen {
	if f := x.m.finding; f != nil && f.set && f.scope == scope {
		return f
	}
	return nil
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

// written holds one applied write to the rules: the store's precondition,
// the version, the record's shape, and the lifecycle table for the event
// behind it, with the seed's policy.
func (l *lifeChecker) written(x *writeSeen) {
	w := l.w
	if w.stopped || x.scope < 0 {
		return
	}
	prev, after := x.prev, x.after
	switch x.kind {
	case core.WriteInsert:
		if prev.Exists() {
			l.fail(0, x.scope, "an insert applied over a %v record", prev.Status)
			return
		}
		if after.Version != 1 {
			l.fail(invLifecycle, x.scope, "an inserted record has version %d, want 1", after.Version)
			return
		}
	case core.WriteUpdate, core.WriteDelete:
		if !prev.Exists() || prev.Token != x.expect.ExpectToken || prev.Version != x.expect.ExpectVersion {
			l.fail(0, x.scope, "a %v expecting version %d and token %d applied to a %v record at version %d, token %d",
				x.kind, x.expect.ExpectVersion, x.expect.ExpectToken, prev.Status, prev.Version, prev.Token)
			return
		}
		if x.kind == core.WriteUpdate && after.Version != prev.Version+1 {
			l.fail(invLifecycle, x.scope, "an update wrote version %d over version %d: each write bumps it by one (%s over %s)", after.Version, prev.Version, describeRecord(after), describeRecord(prev))
			return
		}
	}
	if d := shapeDiff(after); d != "" {
		l.fail(invLifecycle, x.scope, "a write left a %v record %s", after.Status, d)
		return
	}
	if after.Status == core.StatusUnknown && prev.Status != core.StatusUnknown {
		*l.counter(x.scope) = 0
	}
	kind := x.eventKind()
	if kind == core.EventInvalid || x.now.IsZero() {
		return // a live run's server: the event and its time are not known
	}
	if why := l.rule(kind, x); why != "" {
		l.fail(invLifecycle, x.scope, "%v wrote %v -> %v (%v): %s", kind, prev.Status, after.Status, x.kind, why)
	}
}

// rule is what is wrong with x, a write of an event of kind, by the
// lifecycle table and the policy; "" when nothing is.
func (l *lifeChecker) rule(kind core.EventKind, x *writeSeen) string {
	p := &l.w.policy
	prev, after, now := x.prev, x.after, x.now
	ownedBy := func(st ...core.Status) string {
		if t := x.token(); t != 0 && prev.Token != t {
			return "the record belongs to attempt " + fmt.Sprint(prev.Token) + ", not to the event's " + fmt.Sprint(t)
		}
		for _, s := range st {
			if prev.Status == s {
				return ""
			}
		}
		return "the event does not apply to a " + prev.Status.String() + " record"
	}
	switch kind {
	case core.EventReserve:
		switch {
		case after.Status == core.StatusInProgress && x.kind != core.WriteDelete && after.Token != prev.Token:
			return l.newAttempt(x)
		case after.Status == core.StatusUnknown && prev.Status == core.StatusInProgress:
			if now.Before(prev.LockedUntil) {
				return "the lease runs until " + fmtStamp(prev.LockedUntil) + ", after now " + fmtStamp(now)
			}
			return intoUnknown(x)
		}
		return "a reserve either starts an attempt or hands an expired lease to the reconciler"
	case core.EventComplete:
		if why := ownedBy(core.StatusInProgress, core.StatusUnknown); why != "" {
			return why
		}
		if after.Status != core.StatusCompleted || x.kind != core.WriteUpdate {
			return "a completion makes the record completed"
		}
		if x.ev != nil && !sameResponse(after.Response, x.ev.Response) {
			return "the stored response is not the one completed"
		}
		return settled(x, p.TTL)
	case core.EventFail:
		if why := ownedBy(core.StatusInProgress, core.StatusUnknown); why != "" {
			return why
		}
		evict := p.Fail == core.FailEvict
		if why := byMode(x, p.Fail, evict, core.StatusFailedRetryable); why != "" || evict {
			return why
		}
		return settled(x, p.TTL)
	case core.EventMarkUnknown:
		if why := ownedBy(core.StatusInProgress); why != "" {
			return why
		}
		if after.Status != core.StatusUnknown {
			return "mark unknown makes the record unknown"
		}
		return intoUnknown(x)
	case core.EventHeartbeat:
		if why := ownedBy(core.StatusInProgress); why != "" {
			return why
		}
		want := now.Add(p.LeaseDuration)
		if prev.LockedUntil.After(want) {
			want = prev.LockedUntil // a lease never shrinks
		}
		if after.Status != core.StatusInProgress || !after.LockedUntil.Equal(want) {
			return "a heartbeat at " + fmtStamp(now) + " leaves an in_progress lease until " + fmtStamp(want) + ", not " + fmtStamp(after.LockedUntil)
		}
		return sameAttempt(x)
	case core.EventResolve:
		return l.resolve(x)
	case core.EventSweep:
		return l.sweep(x)
	}
	return ""
}

// newAttempt holds a reserve that hands the key to a new attempt: only a
// record that no longer binds its key (absent, a tombstone, a settled
// record past its TTL) or a failed_retryable one; never an in_progress or
// unknown record, whatever its times say.
func (l *lifeChecker) newAttempt(x *writeSeen) string {
	p := &l.w.policy
	prev, after, now := x.prev, x.after, x.now
	binds := false
	switch prev.Status {
	case core.StatusInProgress, core.StatusUnknown:
		return "a new attempt replaced an " + prev.Status.String() + " record (only its owner or the reconciler settles it)"
	case core.StatusCompleted:
		binds = now.Before(prev.ExpiresAt)
		if binds {
			return "a new attempt replaced a completed record before its expiry " + fmtStamp(prev.ExpiresAt)
		}
	case core.StatusFailedRetryable:
		binds = now.Before(prev.ExpiresAt)
	}
	if prev.Exists() && after.Token <= prev.Token {
		return "the new attempt's token " + fmt.Sprint(after.Token) + " is not fresh"
	}
	if binds {
		if after.Fingerprint != prev.Fingerprint {
			return "another payload took over a failed_retryable record"
		}
		if !after.CreatedAt.Equal(prev.CreatedAt) {
			return "a retry of a failed_retryable record started a new incarnation"
		}
	} else if !after.CreatedAt.Equal(now) {
		return "a new incarnation was created at " + fmtStamp(after.CreatedAt) + ", not now " + fmtStamp(now)
	}
	if !after.LockedUntil.Equal(now.Add(p.LeaseDuration)) {
		return "the lease ends at " + fmtStamp(after.LockedUntil) + ", want now + lease " + fmtStamp(now.Add(p.LeaseDuration))
	}
	if !after.ExpiresAt.Equal(now.Add(p.TTL)) {
		return "expires at " + fmtStamp(after.ExpiresAt) + ", want now + TTL " + fmtStamp(now.Add(p.TTL))
	}
	return ""
}

// resolve holds a reconciler's write: it changes only a record that is
// unknown with the token of the attempt its Check was about, as the
// finding says; "still unknown" counts one attempt and schedules the next
// look at base * 2^(attempts before), capped, or gives the record up to an
// operator at the policy's maximum.
func (l *lifeChecker) resolve(x *writeSeen) string {
	p := &l.w.policy
	prev, after, now := x.prev, x.after, x.now
	if prev.Status != core.StatusUnknown {
		return "a finding changed a record that is no longer unknown"
	}
	verdict, token := core.VerdictInvalid, core.Token(0)
	var response *core.Response
	if f := x.finding(x.scope); f != nil {
		verdict, token, response = f.verdict, f.token, &f.response
	} else if x.ev != nil {
		verdict, token = x.ev.Verdict, x.ev.Token
	}
	if token != 0 && prev.Token != token {
		return "a finding about attempt " + fmt.Sprint(token) + " changed the record of attempt " + fmt.Sprint(prev.Token)
	}
	if why := sameAttempt(x); why != "" {
		return why
	}
	switch after.Status {
	case core.StatusCompleted:
		if verdict != core.VerdictInvalid && verdict != core.VerdictExecuted {
			return "the finding was " + verdict.String()
		}
		if response != nil && !sameResponse(after.Response, *response) {
			return "the stored response is not the one the ledger holds"
		}
		return settled(x, p.TTL)
	case core.StatusFailedRetryable:
		if verdict != core.VerdictInvalid && verdict != core.VerdictNotExecuted {
			return "the finding was " + verdict.String()
		}
		return settled(x, p.TTL)
	case core.StatusUnknown:
		if verdict != core.VerdictInvalid && verdict != core.VerdictStillUnknown {
			return "the finding was " + verdict.String()
		}
		n := l.counter(x.scope)
		*n++
		if after.ReconcileAttempts != *n {
			return "the record counts " + fmt.Sprint(after.ReconcileAttempts) + " still-unknown answers since it became unknown; the store applied " + fmt.Sprint(*n)
		}
		if after.ReconcileAttempts >= p.ReconcileAttemptsMax {
			if !after.ReconcileAfter.IsZero() {
				return "given up after " + fmt.Sprint(after.ReconcileAttempts) + " answers (the policy's maximum), but still scheduled at " + fmtStamp(after.ReconcileAfter)
			}
			return ""
		}
		if want := now.Add(reconcileBackoff(p, prev.ReconcileAttempts)); !after.ReconcileAfter.Equal(want) {
			return "after " + fmt.Sprint(prev.ReconcileAttempts) + " earlier answers the next look is due at " + fmtStamp(want) + " (base * 2^n, capped), not " + fmtStamp(after.ReconcileAfter)
		}
		return ""
	}
	return "a finding either settles the record or leaves it unknown"
}

// sweep holds a sweeper's write: a lease past its end becomes unknown; a
// settled record past its TTL becomes a tombstone (soft) kept for the
// retention, or goes (hard); a tombstone past its retention goes.
func (l *lifeChecker) sweep(x *writeSeen) string {
	p := &l.w.policy
	prev, after, now := x.prev, x.after, x.now
	switch prev.Status {
	case core.StatusInProgress:
		if now.Before(prev.LockedUntil) {
			return "the lease runs until " + fmtStamp(prev.LockedUntil) + ", after now " + fmtStamp(now)
		}
		if after.Status != core.StatusUnknown {
			return "a lease past its end makes the record unknown"
		}
		return intoUnknown(x)
	case core.StatusCompleted, core.StatusFailedRetryable:
		if now.Before(prev.ExpiresAt) {
			return "the record expires at " + fmtStamp(prev.ExpiresAt) + ", after now " + fmtStamp(now)
		}
		hard := p.Expiry == core.ExpiryHard
		if why := byMode(x, p.Expiry, hard, core.StatusExpired); why != "" || hard {
			return why
		}
		if after.Fingerprint != prev.Fingerprint || !after.CreatedAt.Equal(prev.CreatedAt) {
			return "a tombstone keeps the fingerprint and times that detect key reuse"
		}
		if want := now.Add(p.TombstoneRetention); !after.ExpiresAt.Equal(want) {
			return "a tombstone is pruned after the retention, at " + fmtStamp(want) + ", not " + fmtStamp(after.ExpiresAt)
		}
		return sameAttempt(x)
	case core.StatusExpired:
		if now.Before(prev.ExpiresAt) {
			return "the tombstone is kept until " + fmtStamp(prev.ExpiresAt) + ", after now " + fmtStamp(now)
		}
		if x.kind != core.WriteDelete {
			return "a tombstone past its retention is pruned"
		}
		return ""
	}
	return "the sweeper has nothing to do with a " + prev.Status.String() + " record"
}

// byMode holds x to a policy mode that deletes the record (remove) or
// else makes it status.
func byMode(x *writeSeen, mode fmt.Stringer, remove bool, status core.Status) string {
	switch {
	case remove && x.kind != core.WriteDelete:
		return fmt.Sprintf("by the policy (%v) no record is left", mode)
	case !remove && (x.kind != core.WriteUpdate || x.after.Status != status):
		return fmt.Sprintf("by the policy (%v) the record becomes %v", mode, status)
	}
	return ""
}

// intoUnknown holds a record that becomes unknown: the reconciler looks at
// it now, from zero attempts, and it keeps the lease end that bounds when
// its attempt may still act.
func intoUnknown(x *writeSeen) string {
	after, now := x.after, x.now
	switch {
	case !after.ReconcileAfter.Equal(now):
		return "an unknown record is due for the reconciler now " + fmtStamp(now) + ", not at " + fmtStamp(after.ReconcileAfter)
	case after.ReconcileAttempts != 0:
		return "a record that becomes unknown starts from 0 reconcile attempts, not " + fmt.Sprint(after.ReconcileAttempts)
	case !after.LockedUntil.Equal(x.prev.LockedUntil):
		return "an unknown record keeps its lease end " + fmtStamp(x.prev.LockedUntil) + ", not " + fmtStamp(after.LockedUntil)
	}
	return sameAttempt(x)
}

// settled holds a record that became completed or failed_retryable now:
// kept for the TTL from now, no longer leased or scheduled.
func settled(x *writeSeen, ttl time.Duration) string {
	after, now := x.after, x.now
	switch {
	case !after.ExpiresAt.Equal(now.Add(ttl)):
		return "a settled record expires at now + TTL " + fmtStamp(now.Add(ttl)) + ", not " + fmtStamp(after.ExpiresAt)
	case after.Status == core.StatusCompleted && !after.CompletedAt.Equal(now):
		return "completed at " + fmtStamp(after.CompletedAt) + ", not now " + fmtStamp(now)
	case !after.LockedUntil.IsZero() && after.Status == core.StatusCompleted, !after.ReconcileAfter.IsZero():
		return "a settled record is neither leased nor scheduled"
	}
	return sameAttempt(x)
}

// sameAttempt holds a write that stays within one attempt: same token,
// fingerprint and incarnation.
func sameAttempt(x *writeSeen) string {
	if x.after.Token != x.prev.Token || x.after.Fingerprint != x.prev.Fingerprint || !x.after.CreatedAt.Equal(x.prev.CreatedAt) {
		return "the write changed the record's attempt, fingerprint or incarnation"
	}
	return ""
}

// unchanged holds an event the fast path applied without writing: an
// event the table says changes the record must have written (decided
// holds what it answered).
func (l *lifeChecker) unchanged(scope int32, ev *core.Event, a *store.Applied) {
	w := l.w
	if w.stopped || scope < 0 {
		return
	}
	prev, now, d := &w.shadow[scope], a.Now, a.Transition.Decision.Kind
	owned := prev.Exists() && prev.Token == ev.Token
	why := ""
	switch ev.Kind {
	case core.EventReserve:
		switch {
		case !bindsAt(prev, now):
			why = "the record no longer binds its key: a reserve executes"
		case prev.Fingerprint != ev.Fingerprint:
		case prev.Status == core.StatusFailedRetryable:
			why = "a failed_retryable record is executed again"
		case prev.Status == core.StatusInProgress && !now.Before(prev.LockedUntil):
			why = "a lease past its end is handed to the reconciler"
		}
	case core.EventComplete:
		if owned && (prev.Status == core.StatusInProgress || prev.Status == core.StatusUnknown) {
			why = "the owner's completion of its " + prev.Status.String() + " record is stored"
		}
	case core.EventFail:
		if owned && (prev.Status == core.StatusInProgress || prev.Status == core.StatusUnknown) {
			why = "the owner's proof that nothing executed releases its record"
		}
	case core.EventMarkUnknown, core.EventHeartbeat:
		if owned && prev.Status == core.StatusInProgress {
			why = "the owner's " + ev.Kind.String() + " changes its in_progress record"
		}
	case core.EventResolve:
		if owned && prev.Status == core.StatusUnknown {
			why = "a finding about the unknown attempt is recorded"
		}
	case core.EventSweep:
		switch prev.Status {
		case core.StatusInProgress:
			if !now.Before(prev.LockedUntil) {
				why = "a lease past its end makes the record unknown"
			}
		case core.StatusCompleted, core.StatusFailedRetryable, core.StatusExpired:
			if !now.Before(prev.ExpiresAt) {
				why = "a record past its expiry is swept"
			}
		}
	}
	if why != "" {
		l.fail(invLifecycle, scope, "%v of token %d on a %v record (token %d) at %s wrote nothing (%v): %s", ev.Kind, ev.Token, prev.Status, prev.Token, fmtStamp(now), d, why)
	}
}

// bindsAt reports whether rec still binds its key at now: in_progress and
// unknown records always do, settled ones until their expiry, tombstones
// and absent records never.
func bindsAt(rec *core.Record, now time.Time) bool {
	switch rec.Status {
	case core.StatusInProgress, core.StatusUnknown:
		return true
	case core.StatusCompleted, core.StatusFailedRetryable:
		return now.Before(rec.ExpiresAt)
	}
	return false
}

// reconcileBackoff is the policy's wait before the reconciler's next look
// at a record that was answered "still unknown" n times before: base * 2^n,
// at most the cap (SPEC §5 policy), computed here, not by the core.
func reconcileBackoff(p *core.Policy, n uint32) time.Duration {
	d := p.ReconcileBackoffBase
	for range n {
		if d >= p.ReconcileBackoffCap {
			break
		}
		d *= 2
	}
	return min(d, p.ReconcileBackoffCap)
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

// recordDiff names the first field in which got differs from want, or "".
func recordDiff(want, got *core.Record) string {
	type field struct {
		name string
		same bool
	}
	for _, f := range [...]field{
		{"status", want.Status == got.Status},
		{"fingerprint", want.Fingerprint == got.Fingerprint},
		{"token", want.Token == got.Token},
		{"version", want.Version == got.Version},
		{"response", sameResponse(want.Response, got.Response)},
		{"last error code", want.LastErrorCode == got.LastErrorCode},
		{"locked_until", want.LockedUntil.Equal(got.LockedUntil)},
		{"reconcile_after", want.ReconcileAfter.Equal(got.ReconcileAfter)},
		{"reconcile attempts", want.ReconcileAttempts == got.ReconcileAttempts},
		{"created_at", want.CreatedAt.Equal(got.CreatedAt)},
		{"completed_at", want.CompletedAt.Equal(got.CompletedAt)},
		{"expires_at", want.ExpiresAt.Equal(got.ExpiresAt)},
	} {
		if !f.same {
			return f.name + " (written " + describeRecord(want) + ", read " + describeRecord(got) + ")"
		}
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

// decided holds the decision the fast path's Apply answered for ev on
// prev (the shadow before it) to the lifecycle table's, with the retry
// hints a client or the reconciler is given: the table's answer by the
// checker's own reference (decisionFor), not the core's.
func (l *lifeChecker) decided(scope int32, prev *core.Record, ev *core.Event, a *store.Applied) {
	if l.w.stopped {
		return
	}
	got := a.Transition.Decision
	want := decisionFor(&l.w.policy, prev, ev, a.Now)
	if want.Kind == core.DecisionExecute {
		want.Token = a.Record.Token // the store's fresh token
	}
	if got != want {
		l.fail(invLifecycle, scope, "%v of token %d on a %v record (token %d) at %s was answered %v (token %d, retry after %v), want %v (token %d, retry after %v)",
			ev.Kind, ev.Token, prev.Status, prev.Token, fmtStamp(a.Now), got.Kind, got.Token, got.RetryAfter, want.Kind, want.Token, want.RetryAfter)
	}
}

// decisionFor is the lifecycle table of SPEC §5: the decision for ev on
// prev at now (without Execute's token, which the store hands out).
func decisionFor(p *core.Policy, prev *core.Record, ev *core.Event, now time.Time) core.Decision {
	d := func(k core.DecisionKind) core.Decision { return core.Decision{Kind: k} }
	owned := prev.Exists() && prev.Token == ev.Token
	switch ev.Kind {
	case core.EventReserve:
		switch {
		case !bindsAt(prev, now):
			return d(core.DecisionExecute)
		case prev.Fingerprint != ev.Fingerprint:
			return d(core.DecisionMismatch)
		}
		switch prev.Status {
		case core.StatusInProgress:
			if now.Before(prev.LockedUntil) {
				return core.Decision{Kind: core.DecisionInFlight, RetryAfter: p.RetryAfter}
			}
			return core.Decision{Kind: core.DecisionReconciling, RetryAfter: p.RetryAfter}
		case core.StatusCompleted:
			return d(core.DecisionReplay)
		case core.StatusFailedRetryable:
			return d(core.DecisionExecute)
		}
		retry := p.RetryAfter // unknown: come back when the reconciler looks again
		if !prev.ReconcileAfter.IsZero() {
			retry = max(retry, prev.ReconcileAfter.Sub(now))
		}
		return core.Decision{Kind: core.DecisionReconciling, RetryAfter: retry}
	case core.EventComplete, core.EventFail, core.EventMarkUnknown, core.EventHeartbeat:
		if !owned {
			return d(core.DecisionStale)
		}
		s := prev.Status
		switch ev.Kind {
		case core.EventComplete:
			switch {
			case s == core.StatusInProgress || s == core.StatusUnknown:
				return d(core.DecisionCompleted)
			case s == core.StatusCompleted && sameResponse(prev.Response, ev.Response):
				return d(core.DecisionAcknowledged)
			}
		case core.EventFail:
			switch s {
			case core.StatusInProgress, core.StatusUnknown:
				return d(core.DecisionFailed)
			case core.StatusFailedRetryable:
				return d(core.DecisionAcknowledged)
			}
		case core.EventMarkUnknown:
			switch s {
			case core.StatusInProgress:
				return d(core.DecisionMarkedUnknown)
			case core.StatusUnknown:
				return d(core.DecisionAcknowledged)
			}
		case core.EventHeartbeat:
			if s == core.StatusInProgress {
				return d(core.DecisionExtended)
			}
		}
		return d(core.DecisionConflict)
	case core.EventResolve:
		switch {
		case prev.Status != core.StatusUnknown:
			return d(core.DecisionNotApplicable)
		case !owned:
			return d(core.DecisionStale)
		case ev.Verdict != core.VerdictStillUnknown:
			return d(core.DecisionResolved)
		case prev.ReconcileAttempts+1 >= p.ReconcileAttemptsMax:
			return d(core.DecisionAbandoned)
		}
		return core.Decision{Kind: core.DecisionRescheduled, RetryAfter: reconcileBackoff(p, prev.ReconcileAttempts)}
	case core.EventSweep:
		switch prev.Status {
		case core.StatusInProgress:
			if !now.Before(prev.LockedUntil) {
				return d(core.DecisionLeaseExpired)
			}
		case core.StatusCompleted, core.StatusFailedRetryable:
			if !now.Before(prev.ExpiresAt) {
				return d(core.DecisionExpired)
			}
		case core.StatusExpired:
			if !now.Before(prev.ExpiresAt) {
				return d(core.DecisionPruned)
			}
		}
		return d(core.DecisionNothingDue)
	}
	return d(core.DecisionInvalid)
}
