package idem_test

import (
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/scenario"
)

// TestFlowScenarios runs the Flow scenarios (testdata/flow, the format and
// commands in package internal/scenario): requests' Flows hosted by hand,
// one effect at a time, over a memory store whose clock the scenario sets.
// They show the executor's protocol as Do runs it: what it asks of its host,
// what it makes of each report, and what it answers. The wasm core runs the
// same files (wasmcore's TestFlowScenariosThroughWasm). Rewrite the expected
// output after a change with: go test . -run FlowScenarios -rewrite
func TestFlowScenarios(t *testing.T) {
	scenario.Walk(t, "testdata/flow", func(t *testing.T) scenario.Runner {
		return scenario.NewFlows(core.Step).Run
	})
}
