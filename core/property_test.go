package core

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// source draws the world's random choices: rapid (which shrinks failures)
// in the property tests, a seeded PRNG where a test needs to see a checker fail.
type source interface {
	intRange(name string, lo, hi int) int
	Fatalf(format string, args ...any)
}

type rapidSource struct{ *rapid.T }

func (s rapidSource) intRange(name string, lo, hi int) int {
	return rapid.IntRange(lo, hi).Draw(s.T, name)
}

// prngSource records the first failure instead of stopping the test.
type prngSource struct {
	rng    *rand.Rand
	failed string
}

func (s *prngSource) intRange(_ string, lo, hi int) int { return lo + s.rng.IntN(hi-lo+1) }
func (s *prngSource) Fatalf(format string, args ...any) {
	if s.failed == "" {
		s.failed = fmt.Sprintf(format, args...)
	}
	panic(s)
}

// firstFailure runs run over the worlds of seeds 0..499 of stream, until
// one fails (a failed check or a panic), and returns that failure, or "".
func firstFailure(stream uint64, run func(source)) string {
	for seed := uint64(0); seed < 500; seed++ {
		src := &prngSource{rng: rand.New(rand.NewPCG(seed, stream))}
		func() {
			defer func() {
				if r := recover(); r != nil && src.failed == "" {
					src.failed = fmt.Sprint("panic: ", r)
				}
			}()
			run(src)
		}()
		if src.failed != "" {
			return src.failed
		}
	}
	return ""
}

func pick[V any](src source, name string, vs []V) V { return vs[src.intRange(name, 0, len(vs)-1)] }

// world is a handful of scopes driven by random events, with a store-like
// token counter that never repeats. It tracks what the SPEC §6 invariants
// need to know about each scope.
type world struct {
	policy  Policy
	now     time.Time
	scopes  []scopeState
	tokenID Token
}

type scopeState struct {
	cur Record
	// maybeExecuted holds the tokens of this incarnation that were told to
	// Execute and not since proven not to have executed.
	maybeExecuted map[Token]bool
	// stored is the response the one execution stored, if any.
	stored    *Response
	pastToken []Token
}

func newWorld(t source) *world {
	p := PolicyDefault()
	p.LeaseDuration = time.Duration(t.intRange("lease_s", 1, 600)) * time.Second
	p.TTL = time.Duration(t.intRange("ttl_h", 1, 72)) * time.Hour
	p.Expiry = ExpiryMode(t.intRange("expiry", 0, 1))
	p.Fail = FailMode(t.intRange("fail", 0, 1))
	p.ReconcileAttemptsMax = uint32(t.intRange("attempts_max", 1, 5))
	w := &world{policy: p, now: t0}
	n := t.intRange("scopes", 1, 4)
	for i := range n {
		s := scopeA
		s.Key = fmt.Sprintf("key-%02d-0123456789abcdef", i)
		if i%2 == 1 {
			s.Principal = "user-2" // same key text, another principal: another record
			s.Key = fmt.Sprintf("key-%02d-0123456789abcdef", i-1)
		}
		w.scopes = append(w.scopes, scopeState{cur: Record{Scope: s}, maybeExecuted: map[Token]bool{}})
	}
	return w
}

var (
	fingerprints = []Fingerprint{fpA, fpB}
	responses    = []Response{resp1, resp2, {StatusCode: 500, Body: []byte("boom")}}
)

// drawEvent draws a valid event for scope s.
func (w *world) drawEvent(t source, s *scopeState) Event {
	step := pick(t, "advance", []time.Duration{0, time.Millisecond, time.Second, w.policy.LeaseDuration / 2,
		w.policy.LeaseDuration, w.policy.TTL, 3 * w.policy.TTL})
	w.now = w.now.Add(step)
	ev := Event{
		Kind: EventKind(t.intRange("kind", int(EventReserve), int(EventEvict))),
		Now:  w.now,
	}
	switch ev.Kind {
	case EventReserve:
		w.tokenID++
		ev.Token = w.tokenID
		ev.Fingerprint = pick(t, "fp", fingerprints)
	case EventSweep:
	default:
		// Mostly the owner's token; else an older one of this scope, or one never issued.
		choices := append([]Token{s.cur.Token, s.cur.Token, s.cur.Token, w.tokenID + 1000}, s.pastToken...)
		ev.Token = pick(t, "token", choices)
		if ev.Token == 0 {
			ev.Token = 1
		}
		ev.Response = pick(t, "response", responses)
		ev.ErrorCode = pick(t, "code", []ErrorCode{"", "gateway_timeout"})
		ev.Verdict = Verdict(t.intRange("verdict", int(VerdictExecuted), int(VerdictStillUnknown)))
	}
	return ev
}

type stepFunc func(Record, Event, Policy) (stepped, error)

// TestPropertyInvariants runs random event sequences over several scopes and
// checks SPEC §6 invariants 1-4 and 8 after every step.
func TestPropertyInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runWorld(rapidSource{t}, step) })
}

// runWorld drives step over a random world and checks every step.
func runWorld(t source, step stepFunc) {
	w := newWorld(t)
	steps := t.intRange("steps", 1, 200)
	for range steps {
		i := t.intRange("scope", 0, len(w.scopes)-1)
		s := &w.scopes[i]
		ev := w.drawEvent(t, s)
		if t.intRange("corrupt", 0, 19) == 0 {
			checkBadInput(t, step, s.cur, ev, w.policy)
			continue
		}
		cur := s.cur
		r, err := step(cur, ev, w.policy)
		if err != nil {
			t.Fatalf("invariant 8: valid %v on %s: %v", ev.Kind, cur.Describe(), err)
		}
		checkStep(t, s, cur, ev, r)
		s.cur = r.Next
		if ev.Kind == EventReserve && r.Decision.Kind == DecisionExecute {
			s.pastToken = append(s.pastToken, ev.Token)
		}
	}
}

// TestInvariantCheckerCatchesPlantedBugs runs the same checker over cores
// with one rule broken each, and expects every one to be caught.
func TestInvariantCheckerCatchesPlantedBugs(t *testing.T) {
	planted := map[string]stepFunc{
		"expired lease re-executes": func(c Record, e Event, p Policy) (stepped, error) {
			r, err := step(c, e, p)
			if e.Kind == EventReserve && c.Status == StatusInProgress && r.Decision.Kind == DecisionReconciling {
				r.Decision = Decision{Kind: DecisionExecute, Token: e.Token}
				r.Next.Status, r.Next.Token = StatusInProgress, e.Token
			}
			return r, err
		},
		"no fencing": func(c Record, e Event, p Policy) (stepped, error) {
			if e.Kind == EventComplete && c.Exists() {
				e.Token = c.Token
			}
			return step(c, e, p)
		},
		"no fingerprint check": func(c Record, e Event, p Policy) (stepped, error) {
			if e.Kind == EventReserve && c.Exists() {
				e.Fingerprint = c.Fingerprint
			}
			return step(c, e, p)
		},
		"unknown evicted": func(c Record, e Event, p Policy) (stepped, error) {
			r, err := step(c, e, p)
			if r.Next.Status == StatusUnknown {
				r.Next = Record{Scope: c.Scope}
				r.Write = Write{Kind: WriteDelete, ExpectVersion: c.Version, ExpectToken: c.Token}
			}
			return r, err
		},
		"second completion overwrites": func(c Record, e Event, p Policy) (stepped, error) {
			if e.Kind == EventComplete && c.Status == StatusCompleted && c.Token == e.Token {
				c.Status = StatusInProgress
			}
			return step(c, e, p)
		},
		"panic on bad input": func(c Record, e Event, p Policy) (stepped, error) {
			if e.Now.IsZero() {
				panic("zero time")
			}
			return step(c, e, p)
		},
	}
	for name, step := range planted {
		caught := firstFailure(0, func(src source) { runWorld(src, step) })
		if caught == "" {
			t.Errorf("planted bug %q was not caught in 500 worlds", name)
		} else {
			t.Logf("%s: caught: %.120s", name, caught)
		}
	}
}

func checkStep(t source, s *scopeState, cur Record, ev Event, r stepped) {
	d, next := r.Decision, r.Next
	if next.Scope != cur.Scope {
		t.Fatalf("invariant 3: scope changed from %v to %v", cur.Scope, next.Scope)
	}
	// The write matches the change, and its precondition is the input record.
	switch r.Write.Kind {
	case WriteNone:
		if next.Describe() != cur.Describe() {
			t.Fatalf("record changed without a write: %s -> %s", cur.Describe(), next.Describe())
		}
	case WriteInsert:
		if cur.Exists() || next.Version != 1 {
			t.Fatalf("insert over %s, or version %d", cur.Describe(), next.Version)
		}
	case WriteUpdate, WriteDelete:
		if r.Write.ExpectVersion != cur.Version || r.Write.ExpectToken != cur.Token || !cur.Exists() {
			t.Fatalf("write %s does not expect %s", r.Write.Describe(), cur.Describe())
		}
		if r.Write.Kind == WriteUpdate && next.Version != cur.Version+1 {
			t.Fatalf("update to version %d from %d", next.Version, cur.Version)
		}
		if r.Write.Kind == WriteDelete && next.Exists() {
			t.Fatalf("delete left %s", next.Describe())
		}
	}
	// Invariant 4: a token that does not own the record changes nothing.
	if ev.Kind != EventReserve && ev.Kind != EventSweep && (!cur.Exists() || ev.Token != cur.Token) {
		if r.Write.Kind != WriteNone {
			t.Fatalf("invariant 4: stale token %d wrote %s over %s", ev.Token, r.Write.Describe(), cur.Describe())
		}
	}
	// TTL never removes or expires in_progress or unknown; an expired lease never re-executes.
	if (ev.Kind == EventSweep || ev.Kind == EventReserve || ev.Kind == EventEvict) && (cur.Status == StatusInProgress || cur.Status == StatusUnknown) {
		if next.Status != StatusInProgress && next.Status != StatusUnknown {
			t.Fatalf("%v took %s to %v", ev.Kind, cur.Describe(), next.Status)
		}
		if d.Kind == DecisionExecute {
			t.Fatalf("invariant 1: execute over %s", cur.Describe())
		}
	}
	switch d.Kind {
	case DecisionExecute:
		if cur.live(ev.Now) {
			if cur.Fingerprint != ev.Fingerprint {
				t.Fatalf("invariant 3: fingerprint %s executes over %s", ev.Fingerprint.Short(), cur.Describe())
			}
			if len(s.maybeExecuted) > 0 {
				t.Fatalf("invariant 1: execute while tokens %v may have executed: %s", s.maybeExecuted, cur.Describe())
			}
		} else {
			// A new incarnation: the previous one was settled or expired.
			s.maybeExecuted = map[Token]bool{}
			s.stored = nil
		}
		if d.Token != ev.Token || next.Token != ev.Token || next.Status != StatusInProgress {
			t.Fatalf("execute did not hand over token %d: %s", ev.Token, next.Describe())
		}
		s.maybeExecuted[d.Token] = true
	case DecisionReplay:
		if ev.Fingerprint != cur.Fingerprint {
			t.Fatalf("invariant 3: fingerprint %s sees the response of %s", ev.Fingerprint.Short(), cur.Describe())
		}
		if s.stored == nil || !next.Response.Equal(*s.stored) {
			t.Fatalf("invariant 2: replayed %s, stored %v", next.Response.Describe(), s.stored)
		}
	case DecisionMismatch:
		if ev.Fingerprint == cur.Fingerprint {
			t.Fatalf("mismatch with the same fingerprint: %s", cur.Describe())
		}
	case DecisionCompleted, DecisionResolved:
		if next.Status == StatusCompleted {
			if s.stored != nil {
				t.Fatalf("invariant 2: a second outcome %s over %s", next.Response.Describe(), s.stored.Describe())
			}
			resp := ev.Response
			s.stored = &resp
		} else { // resolved as not executed
			delete(s.maybeExecuted, ev.Token)
		}
	case DecisionFailed:
		delete(s.maybeExecuted, ev.Token)
	}
	if next.Status == StatusCompleted && (s.stored == nil || !next.Response.Equal(*s.stored)) {
		t.Fatalf("invariant 2: stored response changed to %s", next.Response.Describe())
	}
}

// checkBadInput corrupts a valid event and expects an error with no result.
func checkBadInput(t source, step stepFunc, cur Record, ev Event, p Policy) {
	switch t.intRange("how", 0, 4) {
	case 0:
		ev.Now = time.Time{}
	case 1:
		ev.Kind = EventKind(t.intRange("bad_kind", int(eventCount), 255))
	case 2:
		p.TTL = TTLMax + time.Duration(t.intRange("over", 1, 1000))
	case 3:
		p.LeaseDuration = -time.Duration(t.intRange("lease", 0, 1000))
	case 4:
		ev.Token = 0
		if ev.Kind == EventSweep {
			ev.Now = time.Time{}
		}
	}
	r, err := step(cur, ev, p)
	if err == nil || r.Write.Kind != WriteNone || r.Decision.Kind != DecisionInvalid || r.Next.Describe() != cur.Describe() {
		t.Fatalf("invariant 8: bad input gave %s and %s, err=%v", r.Describe(), r.Next.Describe(), err)
	}
}

// TestStepNeverPanics feeds Step arbitrary records, events and policies.
func TestStepNeverPanics(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tm := func(name string) time.Time {
			if rapid.Bool().Draw(t, name+"_zero") {
				return time.Time{}
			}
			return time.Unix(rapid.Int64Range(-1<<40, 1<<40).Draw(t, name), 0)
		}
		cur := Record{
			Scope:             Scope{Principal: rapid.String().Draw(t, "principal"), UseCase: "u", Key: rapid.String().Draw(t, "key")},
			Status:            Status(rapid.IntRange(0, 255).Draw(t, "status")),
			Token:             Token(rapid.Uint64().Draw(t, "token")),
			Version:           rapid.Uint64().Draw(t, "version"),
			Fingerprint:       Fingerprint{byte(rapid.IntRange(0, 2).Draw(t, "fp"))},
			LockedUntil:       tm("locked"),
			ExpiresAt:         tm("expires"),
			ReconcileAfter:    tm("reconcile"),
			ReconcileAttempts: rapid.Uint32().Draw(t, "attempts"),
		}
		ev := Event{
			Kind:        EventKind(rapid.IntRange(0, 255).Draw(t, "kind")),
			Now:         tm("now"),
			Token:       Token(rapid.Uint64().Draw(t, "ev_token")),
			Fingerprint: Fingerprint{byte(rapid.IntRange(0, 2).Draw(t, "ev_fp"))},
			Verdict:     Verdict(rapid.IntRange(0, 255).Draw(t, "verdict")),
			Response:    Response{StatusCode: rapid.IntRange(-1, 1000).Draw(t, "code")},
		}
		p := PolicyDefault()
		p.ReconcileBackoffMax = time.Duration(rapid.Int64Range(int64(p.ReconcileBackoffBase), 1<<62).Draw(t, "cap"))
		r, err := step(cur, ev, p)
		if err != nil && (r.Write.Kind != WriteNone || r.Next.Describe() != cur.Describe()) {
			t.Fatalf("error %v came with write %s", err, r.Write.Describe())
		}
		if err == nil && r.Decision.Kind == DecisionInvalid {
			t.Fatalf("no error and no decision")
		}
		_ = r.Describe()
	})
}
