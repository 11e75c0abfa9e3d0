package wasmcore

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/wasm/internal/abi"
)

// The benchmarks of BENCHMARKS.md, "wasm": each Step benchmark runs the
// same step natively and through the module, in the same run.
//
//	go test -run '^$' -bench . -benchmem -count 6 ./wasm/

var (
	benchT0    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	benchScope = core.Scope{Tenant: "acme", Principal: "user-1", UseCase: "payments.create", Key: "550e8400-e29b-41d4-a716-446655440000"}
	benchFP    = core.Fingerprint{1, 2, 3}
	benchResp  = core.Response{StatusCode: 201, Headers: []core.Header{{Name: "Content-Type", Value: "application/json"}}, Body: []byte(`{"paymentId":"p-1"}`), SchemaVersion: 1}
)

// benchSteps are core/bench_test.go's three steps: a new key, a replay of a
// completed record, and a completion.
func benchSteps() []struct {
	name string
	rec  core.Record
	ev   core.Event
	want core.DecisionKind
} {
	p := core.PolicyDefault()
	inProgress := core.Record{Scope: benchScope, Status: core.StatusInProgress, Fingerprint: benchFP, Token: 1, Version: 1,
		LockedUntil: benchT0.Add(p.LeaseDuration), CreatedAt: benchT0, ExpiresAt: benchT0.Add(p.TTL)}
	completed := inProgress
	completed.Status, completed.Response, completed.CompletedAt, completed.LockedUntil = core.StatusCompleted, benchResp, benchT0.Add(time.Second), time.Time{}
	return []struct {
		name string
		rec  core.Record
		ev   core.Event
		want core.DecisionKind
	}{
		{"ReserveAbsent", core.Record{Scope: benchScope}, core.Event{Kind: core.EventReserve, Now: benchT0, Fingerprint: benchFP, Token: 1}, core.DecisionExecute},
		{"ReserveReplay", completed, core.Event{Kind: core.EventReserve, Now: benchT0.Add(time.Minute), Fingerprint: benchFP, Token: 2}, core.DecisionReplay},
		{"Complete", inProgress, core.Event{Kind: core.EventComplete, Now: benchT0.Add(time.Second), Token: 1, Response: benchResp}, core.DecisionCompleted},
	}
}

func benchStep(b *testing.B, step stepper, rec core.Record, ev core.Event, want core.DecisionKind) {
	p := core.PolicyDefault()
	b.ReportAllocs()
	for b.Loop() {
		r := rec
		res, err := step(&r, &ev, &p)
		if err != nil || res.Decision.Kind != want {
			b.Fatal(res.Decision.Kind, err)
		}
	}
}

func BenchmarkStep(b *testing.B) {
	h := testHost(b)
	for _, s := range benchSteps() {
		b.Run(s.name+"/native", func(b *testing.B) { benchStep(b, core.Step, s.rec, s.ev, s.want) })
		b.Run(s.name+"/wazero", func(b *testing.B) { benchStep(b, h.Step, s.rec, s.ev, s.want) })
	}
	// A 64 KiB body: the request carries it into the guest and Step
	// validates it; the answer does not carry it back (ResponseFromEvent).
	large := benchSteps()[2]
	large.ev.Response.Body = make([]byte, 64<<10)
	b.Run("Complete64KiB/native", func(b *testing.B) { benchStep(b, core.Step, large.rec, large.ev, large.want) })
	b.Run("Complete64KiB/wazero", func(b *testing.B) { benchStep(b, h.Step, large.rec, large.ev, large.want) })
}

// BenchmarkStepJSON is the Complete step with encoding/json documents
// instead of the binary layout, on a module built with -tags abijson: the
// measurement behind the choice of encoding.
func BenchmarkStepJSON(b *testing.B) {
	wasm := buildGuest(b, "abijson")
	h, err := newHost(context.Background(), wasm, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(context.Background())
	b.Logf("the abijson module: %d bytes", len(wasm))
	s := benchSteps()[2]
	p := core.PolicyDefault()
	ctx := context.Background()
	inst, err := h.get(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		req, err := json.Marshal(struct {
			Record core.Record
			Event  core.Event
			Policy core.Policy
		}{s.rec, s.ev, p})
		if err != nil {
			b.Fatal(err)
		}
		inst.stack[0] = uint64(len(req))
		if err := inst.input.CallWithStack(ctx, inst.stack); err != nil {
			b.Fatal(err)
		}
		inst.mem.Write(uint32(inst.stack[0]), req)
		inst.stack[0] = uint64(len(req))
		if err := inst.stepFunc.CallWithStack(ctx, inst.stack); err != nil {
			b.Fatal(err)
		}
		out, _ := inst.mem.Read(uint32(inst.stack[0]>>32), uint32(inst.stack[0]))
		var ans struct {
			Transition core.Transition
			Record     core.Record
			Code       uint8
			Error      string
		}
		if err := json.Unmarshal(out, &ans); err != nil || ans.Transition.Decision.Kind != s.want {
			b.Fatal(err, ans.Error)
		}
	}
}

// buildGuest builds the guest with tags into a temporary directory.
func buildGuest(tb testing.TB, tags string) []byte {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "guest.wasm")
	cmd := exec.Command("go", "build", "-tags", tags, "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", out, "./guest")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatal(errors.New(string(msg)), err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return wasm
}

// BenchmarkCompile is wazero compiling the embedded module, once per Host:
// with its optimizing compiler (New's default), with its interpreter, and
// from a compilation cache already holding it (Options.CompilationCacheDir,
// a fresh runtime each time, as after a restart).
func BenchmarkCompile(b *testing.B) {
	ctx := context.Background()
	compile := func(b *testing.B, config func() wazero.RuntimeConfig) {
		b.ReportAllocs()
		for b.Loop() {
			rt := wazero.NewRuntimeWithConfig(ctx, config())
			if _, err := rt.CompileModule(ctx, module); err != nil {
				b.Fatal(err)
			}
			rt.Close(ctx)
		}
	}
	b.Run("compiler", func(b *testing.B) { compile(b, wazero.NewRuntimeConfig) })
	b.Run("interpreter", func(b *testing.B) { compile(b, wazero.NewRuntimeConfigInterpreter) })
	b.Run("cached", func(b *testing.B) {
		cache, err := wazero.NewCompilationCacheWithDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer cache.Close(ctx)
		config := func() wazero.RuntimeConfig { return wazero.NewRuntimeConfig().WithCompilationCache(cache) }
		rt := wazero.NewRuntimeWithConfig(ctx, config()) // fills the cache
		if _, err := rt.CompileModule(ctx, module); err != nil {
			b.Fatal(err)
		}
		rt.Close(ctx)
		compile(b, config)
	})
}

// BenchmarkCompileFloor compiles a minimal Go wasip1 reactor that imports
// only strconv and time: the part of BenchmarkCompile that is Go's runtime
// and not idem.
func BenchmarkCompileFloor(b *testing.B) {
	dir := b.TempDir()
	src := `package main

import (
	"strconv"
	"time"
)

func main() {}

//go:wasmexport floor
func floor(n int64) int64 {
	s := strconv.FormatInt(n, 10) + time.Unix(n, 0).UTC().Format(time.RFC3339)
	return int64(len(s))
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module floor\n\ngo 1.24\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "floor.wasm")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatal(errors.New(string(msg)), err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("the minimal reactor: %d bytes", len(wasm))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rt := wazero.NewRuntime(ctx)
		if _, err := rt.CompileModule(ctx, wasm); err != nil {
			b.Fatal(err)
		}
		rt.Close(ctx)
	}
}

// BenchmarkStepInterpreter is BenchmarkStep's Complete step on wazero's
// interpreter, against the compiler and native in the same run.
func BenchmarkStepInterpreter(b *testing.B) {
	h, err := newHost(context.Background(), module, Options{interpreter: true})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(context.Background())
	s := benchSteps()[2]
	b.Run("native", func(b *testing.B) { benchStep(b, core.Step, s.rec, s.ev, s.want) })
	b.Run("compiler", func(b *testing.B) { benchStep(b, testHost(b).Step, s.rec, s.ev, s.want) })
	b.Run("interpreter", func(b *testing.B) { benchStep(b, h.Step, s.rec, s.ev, s.want) })
}

// BenchmarkInstantiate is one more instance from the compiled module,
// _initialize and the ABI check included: what the pool pays per instance.
func BenchmarkInstantiate(b *testing.B) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	compiled, err := rt.CompileModule(ctx, module)
	if err != nil {
		b.Fatal(err)
	}
	h := &Host{runtime: rt, compiled: compiled, config: wazero.NewModuleConfig().WithName("").WithStartFunctions()}
	for b.Loop() {
		inst, err := h.instantiate(ctx)
		if err != nil {
			b.Fatal(err)
		}
		inst.mod.Close(ctx)
	}
}

// BenchmarkCallFloor calls idem_abi_version, which does nothing: the cost
// of entering and leaving the Go runtime of the module through wazero, the
// floor under any Step through it.
func BenchmarkCallFloor(b *testing.B) {
	h := testHost(b)
	ctx := context.Background()
	inst, err := h.get(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer h.put(ctx, inst)
	version := inst.mod.ExportedFunction("idem_abi_version")
	for b.Loop() {
		if err := version.CallWithStack(ctx, inst.stack); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFloor splits a step on a module built with -tags abifloor, whose
// floor exports (wasm/guest/floor_on.go) run one part of it n times inside
// the guest: ns/op is per step, the host crossing divided away.
//
//	go test -run '^$' -bench Floor -benchmem -count 3 ./wasm/
func BenchmarkFloor(b *testing.B) {
	wasm := buildGuest(b, "abifloor")
	ctx := context.Background()
	h, err := newHost(ctx, wasm, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(ctx)
	for _, s := range benchSteps() {
		inst, err := h.get(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p := core.PolicyDefault()
		req := abi.AppendRequest(nil, &s.rec, &s.ev, &p)
		if err := inst.input.CallWithStack(ctx, []uint64{uint64(len(req))}); err != nil {
			b.Fatal(err)
		}
		addr, _ := inst.input.Call(ctx, uint64(len(req)))
		inst.mem.Write(uint32(addr[0]), req)
		mallocs, err := inst.mod.ExportedFunction("idem_floor_mallocs").Call(ctx, uint64(len(req)), 1000)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: %d guest allocations per step", s.name, mallocs[0]/1000)
		const n = 1000
		for _, part := range []string{"step", "decode", "encode", "whole"} {
			f := inst.mod.ExportedFunction("idem_floor_" + part)
			b.Run(s.name+"/"+part, func(b *testing.B) {
				stack := make([]uint64, 2)
				for b.Loop() {
					stack[0], stack[1] = uint64(len(req)), n
					if err := f.CallWithStack(ctx, stack); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/step")
			})
		}
		h.put(ctx, inst)
	}
}
