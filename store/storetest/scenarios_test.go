package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/idemkit/idem/core"
)

var updateFixture = flag.Bool("update-fixture", false, "rewrite testdata/scenarios.json from scenario_cases.go")

// TestScenarioFileFresh: testdata/scenarios.json is Scenarios(), and reads
// back as it (so that a runner of the file runs what the Go suite runs).
func TestScenarioFileFresh(t *testing.T) {
	got, err := encodeScenarios(Scenarios())
	if err != nil {
		t.Fatal(err)
	}
	const path = "testdata/scenarios.json"
	if *updateFixture {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is stale (%v): run go test ./store/storetest/ -run TestScenarioFileFresh -update-fixture", path, err)
	}
	var back struct{ Scenarios []Scenario }
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	again, err := encodeScenarios(back.Scenarios)
	if err != nil || !bytes.Equal(again, want) {
		t.Fatalf("the file does not read back as itself (%v)", err)
	}
}

// TestScenariosCatchBrokenDrivers: each planted driver of broken_test.go
// fails at least one scenario, and the toy store without a bug passes
// them all.
func TestScenariosCatchBrokenDrivers(t *testing.T) {
	run := func(s *toyStore) (failed []string) {
		for _, sc := range Scenarios() {
			if err := runScenario(context.Background(), s, "catch", &sc); err != nil {
				failed = append(failed, sc.Name+": "+err.Error())
			}
		}
		return failed
	}
	if failed := run(newToy()); len(failed) > 0 {
		t.Fatalf("the toy store fails scenarios: %v", failed)
	}
	for name, s := range map[string]*toyStore{
		"stale reads":                  {staleReads: true},
		"acknowledged writes lost":     {dropAcknowledged: true},
		"tokens repeat after a delete": {tokensPerScope: true},
	} {
		s.records, s.cache = map[core.Scope]*toyEntry{}, map[core.Scope]*cached{}
		failed := run(s)
		if len(failed) == 0 {
			t.Errorf("%s: the driver passes every scenario", name)
			continue
		}
		t.Logf("%s: fails %d scenarios, first %s", name, len(failed), failed[0])
	}
}
