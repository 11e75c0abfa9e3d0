package storetest

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// The suite's scenarios as data (testdata/scenarios.json, SCENARIOS.md):
// sequences of events applied to a store through store.Apply, each with
// the decision, the write and the record it must leave. They need only
// what every store does (apply an event, with the store's time and a
// fresh token for a reserve), so a driver in another language runs the
// same file: wasm/js runs it on its memory and PostgreSQL stores.

// ScenarioFile is the scenarios' file under the module root.
const ScenarioFile = "store/storetest/testdata/scenarios.json"

// Scenario is one sequence of events on fresh scopes.
type Scenario struct {
	Name  string         `json:"name"`
	About string         `json:"about"`
	Fail  core.FailMode  `json:"failMode,omitempty"` // the policy's; the rest is core.PolicyDefault()
	Steps []ScenarioStep `json:"steps"`
}

// ScenarioStep is one event applied and what must come of it.
type ScenarioStep struct {
	Scope int            `json:"scope"` // which of the scenario's scopes: 0 and 1 share a key and differ in principal; 2 has another key
	Event ScenarioEvent  `json:"event"`
	Want  ScenarioExpect `json:"want"`
}

// ScenarioEvent is an event without its time (the store's) and, for a
// reserve, without its token (the store's fresh one).
type ScenarioEvent struct {
	Kind        core.EventKind `json:"kind"`
	KindName    string         `json:"kindName"`
	Fingerprint string         `json:"fingerprint,omitempty"` // "A" or "B": a scenario's two fingerprints
	Token       string         `json:"token,omitempty"`       // a name bound by an earlier step, or "stale" (a token the store never gave)
	Response    *core.Response `json:"response,omitempty"`
	ErrorCode   core.ErrorCode `json:"errorCode,omitempty"`
	Verdict     core.Verdict   `json:"verdict,omitempty"`
}

// ScenarioExpect is what the step must give.
type ScenarioExpect struct {
	Decision     core.DecisionKind `json:"decision"`
	DecisionName string            `json:"decisionName"`
	Write        core.WriteKind    `json:"write"`
	Status       core.Status       `json:"status"` // of the record the store holds after it
	StatusName   string            `json:"statusName"`
	Version      uint64            `json:"version"` // of that record
	// Token names the record's token after the step: bound on its first
	// use (and then new: unlike every token bound before), the same token
	// after that.
	Token string `json:"token,omitempty"`
	// Response is the record's response after the step, when it has one.
	Response *core.Response `json:"response,omitempty"`
	// DecisionToken says the decision carries the record's token (an
	// execute, a replay, an extension): a name bound before, or "" if not checked.
	DecisionToken string `json:"decisionToken,omitempty"`
}

var scenarioFingerprints = map[string]core.Fingerprint{"A": fpA, "B": fpB}

// scenarioScopes are a scenario's scopes: unique to the run and the scenario.
func scenarioScopes(run, name string) [3]core.Scope {
	key := fmt.Sprintf("%s-%s", run, strings.ReplaceAll(name, " ", "-"))
	return [3]core.Scope{
		{Tenant: "scn", Principal: "alice", UseCase: "scenario", Key: key + "-k1"},
		{Tenant: "scn", Principal: "bob", UseCase: "scenario", Key: key + "-k1"},
		{Tenant: "scn", Principal: "alice", UseCase: "scenario", Key: key + "-k2"},
	}
}

// runScenario applies sc's steps to s and reports the first difference.
func runScenario(ctx context.Context, s store.Store, run string, sc *Scenario) error {
	p := core.PolicyDefault()
	p.Fail = sc.Fail
	scopes := scenarioScopes(run, sc.Name)
	tokens := map[string]core.Token{}
	for i, st := range sc.Steps {
		ev := core.Event{Kind: st.Event.Kind, Fingerprint: scenarioFingerprints[st.Event.Fingerprint], ErrorCode: st.Event.ErrorCode, Verdict: st.Event.Verdict}
		if st.Event.Response != nil {
			ev.Response = *st.Event.Response
		}
		switch name := st.Event.Token; {
		case name == "stale":
			ev.Token = core.Token(1<<62 + 12345)
		case name != "":
			ev.Token = tokens[name]
		}
		var a store.Applied
		if err := store.Apply(ctx, s, scopes[st.Scope], ev, &p, &a); err != nil {
			return fmt.Errorf("step %d (%s): %w", i, st.Event.KindName, err)
		}
		if d := checkScenarioStep(&st, &a, tokens); d != "" {
			return fmt.Errorf("step %d (%s on scope %d): %s", i, st.Event.KindName, st.Scope, d)
		}
	}
	return nil
}

func checkScenarioStep(st *ScenarioStep, a *store.Applied, tokens map[string]core.Token) string {
	w := &st.Want
	tr := &a.Transition
	switch {
	case tr.Decision.Kind != w.Decision:
		return fmt.Sprintf("decision %v, want %v", tr.Decision.Kind, w.Decision)
	case tr.Write.Kind != w.Write:
		return fmt.Sprintf("write %v, want %v", tr.Write.Kind, w.Write)
	case a.Record.Status != w.Status:
		return fmt.Sprintf("status %v, want %v", a.Record.Status, w.Status)
	case a.Record.Version != w.Version:
		return fmt.Sprintf("version %d, want %d", a.Record.Version, w.Version)
	}
	if w.Response != nil && responseDiff(&a.Record.Response, w.Response) != "" {
		return "response: " + responseDiff(&a.Record.Response, w.Response)
	}
	if d := bindToken(w.Token, a.Record.Token, tokens); d != "" {
		return d
	}
	if w.DecisionToken != "" && tr.Decision.Token != tokens[w.DecisionToken] {
		return fmt.Sprintf("the decision's token %d, want %s's %d", tr.Decision.Token, w.DecisionToken, tokens[w.DecisionToken])
	}
	return ""
}

// bindToken holds the record's token to name: bound on its first use, when
// it must differ from every token bound before, the same after that.
func bindToken(name string, got core.Token, tokens map[string]core.Token) string {
	if name == "" {
		return ""
	}
	if bound, ok := tokens[name]; ok {
		if got != bound {
			return fmt.Sprintf("token %d, want %s's %d", got, name, bound)
		}
		return ""
	}
	for other, t := range tokens {
		if t == got {
			return fmt.Sprintf("token %d is %s's: a fresh token repeats one the store gave before", t, other)
		}
	}
	tokens[name] = got
	return ""
}

// scenarios runs the file's scenarios on stores of newStore (the suite's
// "scenarios" test).
func (c *contract) scenarios(t *testing.T) {
	for _, sc := range Scenarios() {
		t.Run(strings.ReplaceAll(sc.Name, " ", "-"), func(t *testing.T) {
			if err := runScenario(context.Background(), c.newStore(t), fmt.Sprint(c.cfg.seed), &sc); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// encodeScenarios is the file's bytes.
func encodeScenarios(scs []Scenario) ([]byte, error) {
	fps := map[string]string{}
	for name, fp := range scenarioFingerprints {
		fps[name] = hex.EncodeToString(fp[:])
	}
	b, err := json.MarshalIndent(struct {
		Comment      string            `json:"comment"`
		Fingerprints map[string]string `json:"fingerprints"`
		Scenarios    []Scenario        `json:"scenarios"`
	}{"generated by go test ./store/storetest/ -run TestScenarioFileFresh -update-fixture from scenario_cases.go; the format is SCENARIOS.md's", fps, scs}, "", " ")
	return append(b, '\n'), err
}
