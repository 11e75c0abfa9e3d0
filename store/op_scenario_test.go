package store_test

import (
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/scenario"
)

// TestOpScenarios runs the Op scenarios (testdata/op, the format and
// commands in package internal/scenario): one store.Op at a time, each
// store call a command, over a memory store whose clock the scenario sets.
// They show the caller contract of the core as a store host runs it: load,
// step, write, load again on a lost race, and what a failed call leaves.
// The wasm core runs the same files (wasmcore's TestOpScenariosThroughWasm).
// Rewrite the expected output after a change with:
// go test ./store/ -run OpScenarios -rewrite
func TestOpScenarios(t *testing.T) {
	scenario.Walk(t, "testdata/op", func(t *testing.T) scenario.Runner {
		return scenario.NewOps(core.Step).Run
	})
}
