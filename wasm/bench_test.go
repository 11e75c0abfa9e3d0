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
	p := core.DefaultPolicy()
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
	p := core.DefaultPolicy()
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
	h, err := newHost(context.Background(), wasm)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(context.Background())
	b.Logf("the abijson module: %d bytes", len(wasm))
	s := benchSteps()[2]
	p := core.DefaultPolicy()
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
			Result core.Transition
			Record core.Record
			Code   uint8
			Error  string
		}
		if err := json.Unmarshal(out, &ans); err != nil || ans.Result.Decision.Kind != s.want {
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

// BenchmarkCompile is wazero compiling the embedded module: once per Host.
func BenchmarkCompile(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		rt := wazero.NewRuntime(ctx)
		if _, err := rt.CompileModule(ctx, module); err != nil {
			b.Fatal(err)
		}
		rt.Close(ctx)
	}
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
