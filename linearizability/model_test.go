package linearizability

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/fakeclock"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

var (
	scopeX = core.Scope{Tenant: "t", Principal: "p", UseCase: "lin.test", Key: "0123456789abcdef-x"}
	scopeY = core.Scope{Tenant: "t", Principal: "p", UseCase: "lin.test", Key: "0123456789abcdef-y"}
	t0     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

func recordAt(sc core.Scope, st core.Status, version uint64, token core.Token) core.Record {
	return core.Record{Scope: sc, Status: st, Fingerprint: fpA, Token: token, Version: version, CreatedAt: t0}
}

// Store-model histories, written out by hand.
func ld(client int, call, ret int64, rec core.Record, fresh core.Token) StoreOperation {
	return StoreOperation{Client: client, Call: call, Return: ret, Kind: store.MethodLoad, Scope: rec.Scope, Record: rec, FreshToken: fresh, Ended: EndedOK}
}

func ins(client int, call, ret int64, rec core.Record, o Ending) StoreOperation {
	return StoreOperation{Client: client, Call: call, Return: ret, Kind: store.MethodInsert, Scope: rec.Scope, Record: rec, Ended: o}
}

func cas(client int, call, ret int64, rec core.Record, v uint64, tok core.Token, o Ending) StoreOperation {
	return StoreOperation{Client: client, Call: call, Return: ret, Kind: store.MethodCompareAndSet, Scope: rec.Scope, Record: rec, ExpectVersion: v, ExpectToken: tok, Ended: o}
}

func del(client int, call, ret int64, sc core.Scope, v uint64, tok core.Token, o Ending) StoreOperation {
	return StoreOperation{Client: client, Call: call, Return: ret, Kind: store.MethodDelete, Scope: sc, ExpectVersion: v, ExpectToken: tok, Ended: o}
}

func TestStoreModel(t *testing.T) {
	absent := core.Record{Scope: scopeX}
	r1 := recordAt(scopeX, core.StatusInProgress, 1, 5)
	r2 := recordAt(scopeX, core.StatusCompleted, 2, 5)
	r2.Response = responses[0]
	r2other := r2
	r2other.Response = responses[1]
	for _, c := range []struct {
		name string
		want porcupine.CheckResult
		h    []StoreOperation
	}{
		{"sequential", porcupine.Ok, []StoreOperation{
			ld(0, 0, 1, absent, 5), ins(0, 2, 3, r1, EndedOK), ld(1, 4, 5, r1, 6),
			cas(1, 6, 7, r2, 1, 5, EndedOK), cas(0, 8, 9, r2other, 1, 5, EndedConflict),
			ld(0, 10, 11, r2, 7), del(0, 12, 13, scopeX, 1, 5, EndedConflict), del(1, 14, 15, scopeX, 2, 5, EndedOK),
			del(1, 16, 17, scopeX, 2, 5, EndedConflict), ld(1, 18, 19, absent, 8),
		}},
		{"concurrent inserts, one wins", porcupine.Ok, []StoreOperation{
			ins(0, 0, 10, r1, EndedConflict), ins(1, 1, 9, r1, EndedOK), ld(2, 11, 12, r1, 3),
		}},
		{"both inserts win", porcupine.Illegal, []StoreOperation{
			ins(0, 0, 10, r1, EndedOK), ins(1, 1, 9, r1, EndedOK),
		}},
		{"a lost update: two CAS from one version", porcupine.Illegal, []StoreOperation{
			ins(0, 0, 1, r1, EndedOK), cas(0, 2, 10, r2, 1, 5, EndedOK), cas(1, 3, 9, r2other, 1, 5, EndedOK),
		}},
		{"a conflict although the precondition held", porcupine.Illegal, []StoreOperation{
			ins(0, 0, 1, r1, EndedOK), cas(0, 2, 3, r2, 1, 5, EndedConflict),
		}},
		{"a stale read after the write returned", porcupine.Illegal, []StoreOperation{
			ins(0, 0, 1, r1, EndedOK), cas(0, 2, 3, r2, 1, 5, EndedOK), ld(1, 4, 5, r1, 9),
		}},
		{"a read concurrent with the write may see either", porcupine.Ok, []StoreOperation{
			ins(0, 0, 1, r1, EndedOK), cas(0, 2, 6, r2, 1, 5, EndedOK), ld(1, 3, 4, r1, 9), ld(2, 3, 5, r2, 10),
		}},
		{"a token handed out twice", porcupine.Illegal, []StoreOperation{
			ld(0, 0, 1, absent, 5), ld(1, 2, 3, absent, 5),
		}},
		{"tokens going back", porcupine.Illegal, []StoreOperation{
			ld(0, 0, 1, absent, 5), ld(1, 2, 3, absent, 4),
		}},
		{"tokens survive a delete", porcupine.Illegal, []StoreOperation{
			ld(0, 0, 1, absent, 5), ins(0, 2, 3, r1, EndedOK), del(0, 4, 5, scopeX, 1, 5, EndedOK), ld(0, 6, 7, absent, 2),
		}},
		{"a read of another scope's record", porcupine.Illegal, []StoreOperation{
			ld(0, 0, 1, core.Record{Scope: scopeX}, 5), ins(0, 2, 3, r1, EndedOK),
			{Client: 1, Call: 4, Return: 5, Kind: store.MethodLoad, Scope: scopeY, Record: r1, FreshToken: 6, Ended: EndedOK},
		}},
		{"an ambiguous insert that applied", porcupine.Ok, []StoreOperation{
			ins(0, 0, 1, r1, EndedIndeterminate), ld(1, 2, 3, r1, 6),
		}},
		{"an ambiguous insert that did not", porcupine.Ok, []StoreOperation{
			ins(0, 0, 1, r1, EndedIndeterminate), ld(1, 2, 3, absent, 6),
		}},
		{"an ambiguous insert that applied after its caller gave up", porcupine.Ok, []StoreOperation{
			ins(0, 0, 1, r1, EndedIndeterminate), ld(1, 2, 3, absent, 6), ld(1, 4, 5, r1, 7),
		}},
		{"an ambiguous insert seen, then unseen", porcupine.Illegal, []StoreOperation{
			ins(0, 0, 1, r1, EndedIndeterminate), ld(1, 2, 3, r1, 6), ld(1, 4, 5, absent, 7),
		}},
		{"an ambiguous update whose precondition never held", porcupine.Illegal, []StoreOperation{
			ins(0, 0, 1, r1, EndedOK), cas(0, 2, 3, r2, 9, 5, EndedIndeterminate), ld(1, 4, 5, r2, 7),
		}},
		{"an ambiguous delete that applied", porcupine.Ok, []StoreOperation{
			ins(0, 0, 1, r1, EndedOK), del(0, 2, 3, scopeX, 1, 5, EndedIndeterminate), ld(1, 4, 5, absent, 7),
			ins(1, 6, 7, r1, EndedOK),
		}},
		{"failed calls constrain nothing", porcupine.Ok, []StoreOperation{
			ins(0, 0, 1, r1, EndedFailed), {Client: 0, Call: 2, Return: 3, Kind: store.MethodLoad, Scope: scopeX, Ended: EndedFailed},
			ld(1, 4, 5, absent, 7),
		}},
		{"scopes are checked apart", porcupine.Ok, []StoreOperation{
			ld(0, 0, 1, absent, 5), ld(1, 0, 1, core.Record{Scope: scopeY}, 5),
			ins(0, 2, 3, r1, EndedOK), ins(1, 2, 3, recordAt(scopeY, core.StatusInProgress, 1, 5), EndedOK),
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := CheckStoreHistory(c.h, CheckOptions{Timeout: 10 * time.Second, VisualizationDir: t.TempDir()})
			if r.Err != nil || r.Check != c.want {
				t.Fatalf("%v, want %v", r, c.want)
			}
			if r.Check == porcupine.Illegal && (r.Visualization == "" || len(r.Offending) == 0 || r.Explanation == "") {
				t.Fatalf("illegal without an offender, an explanation or a visualization: %v", r)
			}
		})
	}
}

func TestMalformedHistories(t *testing.T) {
	r1 := recordAt(scopeX, core.StatusInProgress, 1, 5)
	wrongScope := ins(0, 0, 1, r1, EndedOK)
	wrongScope.Scope = scopeY
	for name, h := range map[string][]StoreOperation{
		"scope":      {wrongScope},
		"kind":       {{Kind: 9, Ended: EndedOK}},
		"none":       {{Kind: store.MethodNone, Scope: scopeX, Ended: EndedOK}},
		"due":        {{Kind: store.MethodDue, Scope: scopeX, Ended: EndedOK}},
		"apply":      {{Kind: store.MethodApply, Scope: scopeX, Ended: EndedOK}},
		"ending":     {{Kind: store.MethodLoad}},
		"time":       {ld(0, 5, 4, core.Record{Scope: scopeX}, 1)},
		"client":     {ld(-1, 0, 1, core.Record{Scope: scopeX}, 1)},
		"conflicted": {{Kind: store.MethodLoad, Scope: scopeX, Ended: EndedConflict}},
	} {
		if r := CheckStoreHistory(h, CheckOptions{NoVisualization: true}); r.Err == nil || r.Check != "" {
			t.Errorf("%s: %v, want an error", name, r)
		}
	}
	bad := core.PolicyDefault()
	bad.TTL = 0
	if r := CheckLifecycleHistory(nil, bad, CheckOptions{}); r.Err == nil {
		t.Errorf("invalid policy: %v", r)
	}
	noNow := []LifecycleOperation{{Scope: scopeX, Event: core.Event{Kind: core.EventSweep}, Ended: EndedOK}}
	if r := CheckLifecycleHistory(noNow, core.PolicyDefault(), CheckOptions{}); r.Err == nil {
		t.Errorf("an event without the store's time: %v", r)
	}
}

// lifecycleRun applies events sequentially through a Recorder over the
// memory store, on a fake clock, and returns the history.
func lifecycleRun(t *testing.T, p core.Policy, hide bool, evs ...core.Event) ([]LifecycleOperation, *fakeclock.Clock) {
	t.Helper()
	clk := fakeclock.New()
	var s store.Store = memstore.New(memstore.Options{Clock: clk.Now})
	if hide {
		s = store.HideApplier(s)
	}
	rec := NewRecorder(s, nil)
	var token core.Token
	for _, ev := range evs {
		if ev.Kind != core.EventReserve && ev.Kind != core.EventSweep && ev.Token == 0 {
			ev.Token = token
		}
		a, err := applyOver(context.Background(), rec.Client(0), &p, scopeX, ev)
		if err != nil {
			t.Fatalf("%v: %v", ev.Kind, err)
		}
		if a.Transition.Decision.Kind == core.DecisionExecute {
			token = a.Transition.Decision.Token
		}
		clk.Advance(time.Second)
	}
	return rec.LifecycleHistory(), clk
}

func TestLifecycleModel(t *testing.T) {
	p := core.PolicyDefault()
	evs := []core.Event{
		{Kind: core.EventReserve, Fingerprint: fpA},
		{Kind: core.EventReserve, Fingerprint: fpA},
		{Kind: core.EventReserve, Fingerprint: fpB},
		{Kind: core.EventHeartbeat},
		{Kind: core.EventMarkUnknown},
		{Kind: core.EventResolve, Verdict: core.VerdictNotExecuted},
		{Kind: core.EventReserve, Fingerprint: fpA},
		{Kind: core.EventComplete, Response: responses[0]},
		{Kind: core.EventReserve, Fingerprint: fpA},
		{Kind: core.EventSweep},
	}
	check := func(t *testing.T, h []LifecycleOperation, want porcupine.CheckResult) {
		t.Helper()
		r := CheckLifecycleHistory(h, p, CheckOptions{Timeout: 10 * time.Second, VisualizationDir: t.TempDir()})
		if r.Err != nil || r.Check != want {
			t.Fatalf("%v, want %v", r, want)
		}
	}
	for _, hide := range []bool{false, true} {
		h, _ := lifecycleRun(t, p, hide, evs...)
		if len(h) != len(evs) {
			t.Fatalf("%d operations recorded, want %d", len(h), len(evs))
		}
		t.Run("recorded", func(t *testing.T) { check(t, h, porcupine.Ok) })
		t.Run("a second execute", func(t *testing.T) {
			// Another client executed the same scope meanwhile, with a fresh
			// token, while the first still held it.
			twin := h[0]
			twin.Client, twin.Call, twin.Return = 1, h[0].Return+1, h[0].Return+2
			twin.Event.Token++
			twin.Transition.Decision.Token++
			twin.Record.Token++
			check(t, append(append([]LifecycleOperation{}, h[:1]...), twin), porcupine.Illegal)
		})
		t.Run("a replay of another response", func(t *testing.T) {
			bad := append([]LifecycleOperation{}, h...)
			bad[8].Record.Response = responses[1]
			check(t, bad, porcupine.Illegal)
		})
		t.Run("a decision the core would not take", func(t *testing.T) {
			bad := append([]LifecycleOperation{}, h...)
			bad[1].Transition.Decision.Kind = core.DecisionReplay
			check(t, bad, porcupine.Illegal)
		})
		t.Run("a status before that the record never had", func(t *testing.T) {
			bad := append([]LifecycleOperation{}, h...)
			bad[3].Before = core.StatusCompleted
			check(t, bad, porcupine.Illegal)
		})
		t.Run("out of real-time order", func(t *testing.T) {
			bad := append([]LifecycleOperation{}, h...)
			bad[7].Call, bad[7].Return, bad[8].Call, bad[8].Return = bad[8].Call, bad[8].Return, bad[7].Call, bad[7].Return
			check(t, bad, porcupine.Illegal)
		})
		t.Run("a stale token reused", func(t *testing.T) {
			// The second execute claims a token not above the first's.
			bad := append([]LifecycleOperation{}, h...)
			tok := h[0].Transition.Decision.Token
			bad[6].Event.Token, bad[6].Transition.Decision.Token, bad[6].Record.Token = tok, tok, tok
			check(t, bad[:7], porcupine.Illegal)
		})
	}
}

// TestLifecycleAmbiguity: an ambiguous reserve whose insert may have
// applied, seen by a later operation or not.
func TestLifecycleAmbiguity(t *testing.T) {
	p := core.PolicyDefault()
	h, _ := lifecycleRun(t, p, true, core.Event{Kind: core.EventReserve, Fingerprint: fpA}, core.Event{Kind: core.EventReserve, Fingerprint: fpA})
	reserve, inFlight := h[0], h[1]
	amb := reserve
	amb.Ended, amb.WriteKnown, amb.Before = EndedIndeterminate, true, 0
	absentRec := core.Record{Scope: scopeX}
	// A later reserve that found nothing and executed with a newer token.
	later := reserve
	later.Client, later.Call, later.Return = 1, inFlight.Call, inFlight.Return
	later.Event.Now = inFlight.Event.Now
	later.Event.Token += 10
	later.Transition.Decision.Token = later.Event.Token
	later.Record.Token = later.Event.Token
	later.Record.CreatedAt, later.Record.LockedUntil, later.Record.ExpiresAt =
		inFlight.Event.Now, inFlight.Event.Now.Add(p.LeaseDuration), inFlight.Event.Now.Add(p.TTL)
	for _, c := range []struct {
		name string
		want porcupine.CheckResult
		h    []LifecycleOperation
	}{
		{"applied: a later reserve is in flight", porcupine.Ok, []LifecycleOperation{amb, inFlight}},
		{"not applied: a later reserve executes", porcupine.Ok, []LifecycleOperation{amb, later}},
		{"seen, then unseen", porcupine.Illegal, []LifecycleOperation{amb, inFlight, shift(later, 10)}},
		{"unknown without a known write: resynchronised", porcupine.Ok, []LifecycleOperation{
			{Client: 0, Call: 0, Return: 1, Scope: scopeX, Event: core.Event{Kind: core.EventReserve, Fingerprint: fpA}, Ended: EndedIndeterminate},
			shift(inFlight, 5)}},
		{"failed: no effect", porcupine.Ok, []LifecycleOperation{
			{Client: 0, Call: 0, Return: 1, Scope: scopeX, Event: core.Event{Kind: core.EventReserve}, Ended: EndedFailed, Record: absentRec},
			reserve, inFlight}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := CheckLifecycleHistory(c.h, p, CheckOptions{Timeout: 10 * time.Second, VisualizationDir: t.TempDir()})
			if r.Err != nil || r.Check != c.want {
				t.Fatalf("%v, want %v", r, c.want)
			}
		})
	}
}

func shift(op LifecycleOperation, d int64) LifecycleOperation {
	op.Call += d
	op.Return += d
	return op
}

// TestUnknownIsNotAPass: a history porcupine cannot decide within the budget
// is Unknown, reported as such, and not OK.
func TestUnknownIsNotAPass(t *testing.T) {
	var h []StoreOperation
	for i := range 200 {
		h = append(h, ld(i%4, int64(2*i), int64(2*i+1), core.Record{Scope: scopeX}, core.Token(i+1)))
	}
	ops, err := StoreOperations(h, ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slow := StoreModel()
	step := slow.Step
	slow.Step = func(s, in, out any) (bool, any) {
		time.Sleep(time.Millisecond)
		return step(s, in, out)
	}
	r := check("store", slow, ops, CheckOptions{Timeout: 20 * time.Millisecond, VisualizationDir: t.TempDir()}, time.Now())
	if r.Check != porcupine.Unknown || r.OK() {
		t.Fatalf("%v, want %v and not OK", r, porcupine.Unknown)
	}
	if len(r.Offending) != 1 || r.Offending[0].Check != porcupine.Unknown || !strings.Contains(r.String(), "Unknown") {
		t.Fatalf("the undecided scope is not reported: %v", r)
	}
	t.Log(r)
}
