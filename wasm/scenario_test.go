package wasmcore

import (
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/flow"
	"github.com/idemkit/idem/internal/scenario"
)

// stepsCompared is a StepFunc that steps through the wasm core and fails t
// where the native core would have done otherwise (records compared whole),
// counting the steps in *n.
func stepsCompared(t *testing.T, h *Host, n *int) core.StepFunc {
	return func(rec *core.Record, ev *core.Event, p *core.Policy) (core.Transition, error) {
		start := *rec
		if _, d := compareStep(core.Step, h.Step, &start, ev, p); d != "" {
			t.Errorf("wasm differs from native on %s:\n%s", ev.Kind, d)
		}
		*n++
		return h.Step(rec, ev, p)
	}
}

// walkThroughWasm runs the scenarios under dir with the wasm core in place
// of the native one, and fails when fewer than stepsMin steps went through
// it: a reader that runs nothing must not pass.
func walkThroughWasm(t *testing.T, dir string, stepsMin int, start func(core.StepFunc) scenario.Runner) {
	h := testHost(t)
	steps := 0
	scenario.Walk(t, dir, func(t *testing.T) scenario.Runner { return start(stepsCompared(t, h, &steps)) })
	if steps < stepsMin {
		t.Fatalf("only %d steps through the wasm core: is the scenario reader broken?", steps)
	}
}

// TestStepScenariosThroughWasm runs the core's Step scenarios
// (core/testdata/step) through the wasm core: every step must print what the
// scenario expects, and match the native step.
func TestStepScenariosThroughWasm(t *testing.T) {
	walkThroughWasm(t, "../core/testdata/step", 40, func(s core.StepFunc) scenario.Runner { return scenario.NewSteps(s).Run })
}

// TestFlowScenariosThroughWasm runs the executor's Flow scenarios
// (testdata/flow) over a memory store that steps through the wasm core.
func TestFlowScenariosThroughWasm(t *testing.T) {
	walkThroughWasm(t, "../testdata/flow", 30, func(s core.StepFunc) scenario.Runner { return scenario.NewFlows(s).Run })
}

// TestFlowScenariosThroughWasmFlow runs the same Flow scenarios with the
// module's Flow (Host.BeginFlow) in place of the native one, over a store
// that steps through the module's core: the whole lifecycle through wasm,
// printing what the native Flow prints.
func TestFlowScenariosThroughWasmFlow(t *testing.T) {
	h := testHost(t)
	var flows []*Flow
	build := scenario.FlowBuild{
		Begin: func(cfg flow.Config, req flow.Request) (scenario.Protocol, error) {
			f, err := h.BeginFlow(cfg, req)
			if err != nil {
				return nil, err
			}
			flows = append(flows, f)
			return f, nil
		},
		Lease: func(p scenario.Protocol, sent time.Time) scenario.LeaseKeeper {
			l := p.(*Flow).Lease(sent)
			return &l
		},
	}
	walkThroughWasm(t, "../testdata/flow", 30, func(s core.StepFunc) scenario.Runner { return scenario.NewFlowsOf(build, s).Run })
	if len(flows) < 20 {
		t.Fatalf("only %d flows began in the module: is the scenario reader broken?", len(flows))
	}
	for _, f := range flows {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestOpScenariosThroughWasm runs the store's Op scenarios
// (store/testdata/op) with Ops that step through the wasm core.
func TestOpScenariosThroughWasm(t *testing.T) {
	walkThroughWasm(t, "../store/testdata/op", 20, func(s core.StepFunc) scenario.Runner { return scenario.NewOps(s).Run })
}
