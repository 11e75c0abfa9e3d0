package storetest

import "github.com/idemkit/idem/core"

// Scenarios are the suite's scenarios as data (scenarios.go): what
// testdata/scenarios.json holds, and what RunStoreSuite runs as its
// "scenarios" contract test.
func Scenarios() []Scenario {
	b := newScenarioSteps()
	scs := append(oneAttemptScenarios(b), laterAttemptScenarios(b)...)
	for i := range scs {
		for j := range scs[i].Steps {
			st := &scs[i].Steps[j]
			st.Event.KindName = st.Event.Kind.String()
			st.Want.DecisionName, st.Want.StatusName = st.Want.Decision.String(), st.Want.Status.String()
		}
	}
	return scs
}

// scenarioSteps builds the steps of the scenarios.
type scenarioSteps struct {
	created, declined *core.Response
	reserve           func(scope int, fp string, want ScenarioExpect) ScenarioStep
	with              func(scope int, ev ScenarioEvent, want ScenarioExpect) ScenarioStep
	complete          func(token string, r *core.Response) ScenarioEvent
	want              func(d core.DecisionKind, w core.WriteKind, st core.Status, version uint64, token string) ScenarioExpect
	executed          func(token string) ScenarioExpect
	replayed          func(version uint64, token string, r *core.Response) ScenarioExpect
	completedWith     func(version uint64, token string, r *core.Response) ScenarioExpect
}

func newScenarioSteps() scenarioSteps {
	created := &core.Response{StatusCode: 201, Headers: []core.Header{{Name: "Content-Type", Value: "application/json"}}, Body: []byte(`{"id":"p-1"}`)}
	declined := &core.Response{StatusCode: 402, Body: []byte(`{"declined":true}`)}
	reserve := func(scope int, fp string, want ScenarioExpect) ScenarioStep {
		return ScenarioStep{Scope: scope, Event: ScenarioEvent{Kind: core.EventReserve, Fingerprint: fp}, Want: want}
	}
	with := func(scope int, ev ScenarioEvent, want ScenarioExpect) ScenarioStep {
		return ScenarioStep{Scope: scope, Event: ev, Want: want}
	}
	complete := func(token string, r *core.Response) ScenarioEvent {
		return ScenarioEvent{Kind: core.EventComplete, Token: token, Response: r}
	}
	want := func(d core.DecisionKind, w core.WriteKind, st core.Status, version uint64, token string) ScenarioExpect {
		return ScenarioExpect{Decision: d, Write: w, Status: st, Version: version, Token: token}
	}
	executed := func(token string) ScenarioExpect {
		e := want(core.DecisionExecute, core.WriteInsert, core.StatusInProgress, 1, token)
		e.DecisionToken = token
		return e
	}
	replayed := func(version uint64, token string, r *core.Response) ScenarioExpect {
		e := want(core.DecisionReplay, core.WriteNone, core.StatusCompleted, version, token)
		e.Response = r
		return e
	}
	completedWith := func(version uint64, token string, r *core.Response) ScenarioExpect {
		e := want(core.DecisionCompleted, core.WriteUpdate, core.StatusCompleted, version, token)
		e.Response = r
		return e
	}
	return scenarioSteps{created: created, declined: declined, reserve: reserve, with: with, complete: complete, want: want,
		executed: executed, replayed: replayed, completedWith: completedWith}
}

// oneAttemptScenarios are the scenarios of a key's first attempt.
func oneAttemptScenarios(b scenarioSteps) []Scenario {
	created, reserve, with, complete, want, executed, replayed, completedWith := b.created, b.reserve, b.with, b.complete, b.want, b.executed, b.replayed, b.completedWith
	return []Scenario{
		{Name: "execute then replay", About: "a new key executes with a fresh token; its completion is stored; a retry replays it, byte for byte, without a write", Steps: []ScenarioStep{
			reserve(0, "A", executed("t1")),
			with(0, complete("t1", created), completedWith(2, "t1", created)),
			reserve(0, "A", replayed(2, "t1", created)),
		}},
		{Name: "another request under the key", About: "the same key with another fingerprint is a mismatch, while it runs and once it is done", Steps: []ScenarioStep{
			reserve(0, "A", executed("t1")),
			reserve(0, "B", want(core.DecisionMismatch, core.WriteNone, core.StatusInProgress, 1, "t1")),
			with(0, complete("t1", created), completedWith(2, "t1", created)),
			reserve(0, "B", want(core.DecisionMismatch, core.WriteNone, core.StatusCompleted, 2, "t1")),
		}},
		{Name: "a retry while it runs", About: "a second reserve of the same request while the first runs is in flight: no write, no new token", Steps: []ScenarioStep{
			reserve(0, "A", executed("t1")),
			reserve(0, "A", want(core.DecisionInFlight, core.WriteNone, core.StatusInProgress, 1, "t1")),
		}},
		{Name: "a completion without the record's token", About: "a completion carrying a token the record does not hold changes nothing", Steps: []ScenarioStep{
			reserve(0, "A", executed("t1")),
			with(0, complete("stale", created), want(core.DecisionStale, core.WriteNone, core.StatusInProgress, 1, "t1")),
			with(0, complete("t1", created), completedWith(2, "t1", created)),
		}},
		{Name: "a heartbeat extends the owner's lease only", About: "the owner's heartbeat extends its lease; a heartbeat with another token is stale", Steps: []ScenarioStep{
			reserve(0, "A", executed("t1")),
			with(0, ScenarioEvent{Kind: core.EventHeartbeat, Token: "t1"}, want(core.DecisionExtended, core.WriteUpdate, core.StatusInProgress, 2, "t1")),
			with(0, ScenarioEvent{Kind: core.EventHeartbeat, Token: "stale"}, want(core.DecisionStale, core.WriteNone, core.StatusInProgress, 2, "t1")),
		}},
	}
}

// laterAttemptScenarios are the scenarios of attempts after the first:
// released, unknown, shared keys and late owners.
func laterAttemptScenarios(b scenarioSteps) []Scenario {
	created, declined, reserve, with, complete, want, executed, replayed, completedWith := b.created, b.declined, b.reserve, b.with, b.complete, b.want, b.executed, b.replayed, b.completedWith
	return []Scenario{
		{Name: "not executed frees the key", About: "an attempt that did nothing fails retryably; the next reserve executes again with a new token", Steps: []ScenarioStep{
			reserve(0, "A", executed("t1")),
			with(0, ScenarioEvent{Kind: core.EventFail, Token: "t1", ErrorCode: "gateway_down"}, want(core.DecisionFailed, core.WriteUpdate, core.StatusFailedRetryable, 2, "t1")),
			reserve(0, "A", want(core.DecisionExecute, core.WriteUpdate, core.StatusInProgress, 3, "t2")),
			with(0, complete("t2", created), completedWith(4, "t2", created)),
			reserve(0, "A", replayed(4, "t2", created)),
		}},
		{Name: "not executed under the evict policy", About: "with FailMode evict, a failed attempt's record is deleted; the next reserve inserts it again with a token never given before", Fail: core.FailEvict, Steps: []ScenarioStep{
			reserve(0, "A", executed("t1")),
			with(0, ScenarioEvent{Kind: core.EventFail, Token: "t1"}, want(core.DecisionFailed, core.WriteDelete, core.StatusAbsent, 0, "")),
			reserve(0, "A", executed("t2")),
		}},
		{Name: "an unknown outcome is never executed again", About: "an attempt marked unknown is reconciling for every retry, until its resolution: executed stores the response, and retries replay it", Steps: []ScenarioStep{
			reserve(0, "A", executed("t1")),
			with(0, ScenarioEvent{Kind: core.EventMarkUnknown, Token: "t1", ErrorCode: "gateway_timeout"}, want(core.DecisionMarkedUnknown, core.WriteUpdate, core.StatusUnknown, 2, "t1")),
			reserve(0, "A", want(core.DecisionReconciling, core.WriteNone, core.StatusUnknown, 2, "t1")),
			with(0, ScenarioEvent{Kind: core.EventResolve, Token: "t1", Verdict: core.VerdictExecuted, Response: declined},
				ScenarioExpect{Decision: core.DecisionResolved, Write: core.WriteUpdate, Status: core.StatusCompleted, Version: 3, Token: "t1", Response: declined}),
			reserve(0, "A", replayed(3, "t1", declined)),
		}},
		{Name: "an unknown outcome proved not executed", About: "a resolution of not executed frees the key: the next reserve executes with a new token", Steps: []ScenarioStep{
			reserve(0, "A", executed("t1")),
			with(0, ScenarioEvent{Kind: core.EventMarkUnknown, Token: "t1"}, want(core.DecisionMarkedUnknown, core.WriteUpdate, core.StatusUnknown, 2, "t1")),
			with(0, ScenarioEvent{Kind: core.EventResolve, Token: "t1", Verdict: core.VerdictNotExecuted}, want(core.DecisionResolved, core.WriteUpdate, core.StatusFailedRetryable, 3, "t1")),
			reserve(0, "A", want(core.DecisionExecute, core.WriteUpdate, core.StatusInProgress, 4, "t2")),
		}},
		{Name: "scopes that share a key", About: "two principals' records under one key are apart: each executes with its own token, and one's completion is not the other's", Steps: []ScenarioStep{
			reserve(0, "A", executed("alice")),
			reserve(1, "B", executed("bob")),
			with(0, complete("alice", created), completedWith(2, "alice", created)),
			reserve(1, "B", want(core.DecisionInFlight, core.WriteNone, core.StatusInProgress, 1, "bob")),
			with(1, complete("alice", declined), want(core.DecisionStale, core.WriteNone, core.StatusInProgress, 1, "bob")),
			reserve(2, "A", executed("other")),
		}},
		{Name: "a late owner after a new attempt", About: "after its attempt failed and a new one took the key, the first owner's completion and heartbeat change nothing", Steps: []ScenarioStep{
			reserve(0, "A", executed("t1")),
			with(0, ScenarioEvent{Kind: core.EventFail, Token: "t1"}, want(core.DecisionFailed, core.WriteUpdate, core.StatusFailedRetryable, 2, "t1")),
			reserve(0, "A", want(core.DecisionExecute, core.WriteUpdate, core.StatusInProgress, 3, "t2")),
			with(0, complete("t1", created), want(core.DecisionStale, core.WriteNone, core.StatusInProgress, 3, "t2")),
			with(0, ScenarioEvent{Kind: core.EventHeartbeat, Token: "t1"}, want(core.DecisionStale, core.WriteNone, core.StatusInProgress, 3, "t2")),
			with(0, complete("t2", declined), completedWith(4, "t2", declined)),
		}},
		{Name: "a completion repeated", About: "the owner's completion sent twice (a retry after a lost answer) is acknowledged the second time, without a write", Steps: []ScenarioStep{
			reserve(0, "A", executed("t1")),
			with(0, complete("t1", created), completedWith(2, "t1", created)),
			with(0, complete("t1", created), want(core.DecisionAcknowledged, core.WriteNone, core.StatusCompleted, 2, "t1")),
		}},
	}
}
