package wasmcore

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/idemkit/idem/wasm/internal/fpabi"
)

// A test host of fingerprint.wasm (ABI.md, "The fingerprint module"), as
// wasm/js/fingerprint.mjs is Node's: wazero, WASI for the Go runtime only,
// one instance per test.

// fingerprintWasm is wasm/fingerprint.wasm, read once.
var fingerprintWasm = sync.OnceValues(func() ([]byte, error) { return os.ReadFile("fingerprint.wasm") })

func fingerprintModule(t testing.TB) []byte {
	t.Helper()
	b, err := fingerprintWasm()
	if err != nil {
		t.Fatalf("%v: run `make wasm`", err)
	}
	return b
}

// fpRuntime is one wazero runtime with fingerprint.wasm compiled in it,
// shared by the tests: compiling takes a second or more, instantiating
// milliseconds.
var (
	fpRuntimeOnce sync.Once
	fpRuntime     wazero.Runtime
	fpCompiled    wazero.CompiledModule
	fpRuntimeErr  error
)

// fpModule is one instance of fingerprint.wasm.
type fpModule struct {
	t   testing.TB
	mod api.Module
	mem api.Memory
	fns map[string]api.Function
	// inAddr and inBytes are the input buffer as idem_fp_input last gave it.
	inAddr, inBytes uint32
}

// newFPModule instantiates fingerprint.wasm and checks its version and
// exports.
func newFPModule(t testing.TB) *fpModule {
	t.Helper()
	wasm := fingerprintModule(t)
	ctx := context.Background()
	fpRuntimeOnce.Do(func() {
		fpRuntime = wazero.NewRuntime(ctx)
		if _, fpRuntimeErr = wasi_snapshot_preview1.Instantiate(ctx, fpRuntime); fpRuntimeErr != nil {
			return
		}
		fpCompiled, fpRuntimeErr = fpRuntime.CompileModule(ctx, wasm)
	})
	if fpRuntimeErr != nil {
		t.Fatal(fpRuntimeErr)
	}
	mod, err := fpRuntime.InstantiateModule(ctx, fpCompiled, wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Close(ctx) })
	m := &fpModule{t: t, mod: mod, mem: mod.ExportedMemory(fpabi.ExportMemory), fns: map[string]api.Function{}}
	for _, name := range fpabi.Exports[:len(fpabi.Exports)-1] {
		if m.fns[name] = mod.ExportedFunction(name); m.fns[name] == nil {
			t.Fatalf("fingerprint.wasm does not export %s", name)
		}
	}
	if m.mem == nil {
		t.Fatal("fingerprint.wasm exports no memory")
	}
	if v := m.call(fpabi.ExportVersion); v != fpabi.Version {
		t.Fatalf("fingerprint.wasm speaks layout v%d, this host v%d", v, fpabi.Version)
	}
	return m
}

// call calls an export and returns its one result.
func (m *fpModule) call(name string, params ...uint64) uint64 {
	m.t.Helper()
	out, err := m.fns[name].Call(context.Background(), params...)
	if err != nil {
		m.t.Fatalf("%s trapped: %v", name, err)
	}
	return out[0]
}

// write puts b in the input buffer, growing it when it is too small.
func (m *fpModule) write(b []byte) uint64 {
	m.t.Helper()
	n := uint32(len(b))
	if n > m.inBytes {
		m.inAddr, m.inBytes = uint32(m.call(fpabi.ExportInput, uint64(n))), n
	}
	if !m.mem.Write(m.inAddr, b) {
		m.t.Fatalf("the input buffer %#x+%d is outside the memory", m.inAddr, n)
	}
	return uint64(n)
}

// answer is a copy of the answer at (address << 32) | length.
func (m *fpModule) answer(at uint64) []byte {
	m.t.Helper()
	b, ok := m.mem.Read(uint32(at>>32), uint32(at))
	if !ok {
		m.t.Fatalf("the answer %#x is outside the memory", at)
	}
	return append([]byte(nil), b...)
}

// spec compiles req: its handle, or the error NewSpec gave in the module.
func (m *fpModule) spec(req *fpabi.SpecRequest) (uint32, error) {
	m.t.Helper()
	return fpabi.ReadHandle(m.answer(m.call(fpabi.ExportSpec, m.write(fpabi.AppendSpec(nil, req)))))
}

// of is Spec.Of of the spec of handle over body in the module.
func (m *fpModule) of(handle uint32, body []byte) ([32]byte, error) {
	m.t.Helper()
	return fpabi.ReadDigest(m.answer(m.call(fpabi.ExportOf, uint64(handle), m.write(body))))
}

// canonical is Canonicalize over body in the module.
func (m *fpModule) canonical(body []byte) ([]byte, error) {
	m.t.Helper()
	return fpabi.ReadCanonical(m.answer(m.call(fpabi.ExportCanonical, m.write(body))))
}

// release releases handle: true if it was live.
func (m *fpModule) release(handle uint32) bool {
	m.t.Helper()
	return m.call(fpabi.ExportRelease, uint64(handle)) == 1
}
