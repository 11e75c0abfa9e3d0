package core_test

import (
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/scenario"
)

// TestStepScenarios runs the Step scenarios (testdata/step, the format and
// commands in package internal/scenario): what Step decides, writes and
// leaves, one event at a time. The wasm core runs the same files
// (wasmcore's TestStepScenariosThroughWasm). Rewrite the expected output
// after a change of the core with: go test ./core/ -run StepScenarios -rewrite
func TestStepScenarios(t *testing.T) {
	scenario.Walk(t, "testdata/step", func(t *testing.T) scenario.Runner {
		return scenario.NewSteps(core.Step).Run
	})
}
