package wasmcore

import (
	"bytes"
	"sync/atomic"
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/sim"
)

// TestSimulatorRunsOnTheWasmCore: the simulator with every event stepped
// through the wasm module writes, for each seed and on both store paths,
// byte for byte what it writes with the native core.
func TestSimulatorRunsOnTheWasmCore(t *testing.T) {
	h := testHost(t)
	var steps atomic.Int64
	wasmStep := func(rec *core.Record, ev *core.Event, p *core.Policy) (core.Transition, error) {
		steps.Add(1)
		return h.Step(rec, ev, p)
	}
	for _, path := range []sim.StorePath{sim.StorePathCompareAndSet, sim.StorePathApply} {
		for seed := uint64(1); seed <= 2; seed++ {
			cfg := sim.ConfigDefault()
			cfg.Seed, cfg.Requests, cfg.StorePath = seed, 60, path
			native, err := sim.Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Step, cfg.StepName = wasmStep, "wasm"
			before := steps.Load()
			wasm, err := sim.Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if steps.Load() == before {
				t.Fatal("the wasm core stepped nothing")
			}
			var a, b bytes.Buffer
			sim.WriteText(&a, cfg, 1, []*sim.Report{native}, true)
			sim.WriteText(&b, cfg, 1, []*sim.Report{wasm}, true)
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("%v seed %d: the runs differ:\nnative:\n%s\nwasm:\n%s", path, seed, a.String(), b.String())
			}
			if len(native.Events) == 0 || len(native.Events) != len(wasm.Events) {
				t.Fatalf("%v seed %d: %d events natively, %d on wasm", path, seed, len(native.Events), len(wasm.Events))
			}
			for i := range native.Events {
				if native.Events[i] != wasm.Events[i] {
					t.Fatalf("%v seed %d: event %d: %s / %s", path, seed, i, native.Events[i].Describe(), wasm.Events[i].Describe())
				}
			}
		}
	}
}
