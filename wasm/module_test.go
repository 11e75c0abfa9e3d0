package wasmcore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"reflect"
	"strings"
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/scenario"
	"github.com/idemkit/idem/wasm/internal/abi"
	"github.com/idemkit/idem/wasm/internal/stamp"
)

// The module's size targets (BENCHMARKS.md, "wasm"): what a runtime
// downloads and loads, with the core and the executor's protocol in it.
const (
	moduleBytesMax     = 2_500_000
	moduleGzipBytesMax = 700_000 // gzip -9, as `make wasm` reports it
)

// TestModuleSize holds the embedded module to its size targets.
func TestModuleSize(t *testing.T) {
	if len(module) > moduleBytesMax {
		t.Errorf("idem.wasm is %d bytes, over %d", len(module), moduleBytesMax)
	}
	if gz := gzipSize(t, module); gz > moduleGzipBytesMax {
		t.Errorf("idem.wasm is %d bytes gzipped, over %d", gz, moduleGzipBytesMax)
	}
}

// fingerprint.wasm's size limits: it holds package fingerprint, whose
// crypto/sha256 links the standard library's FIPS 140 module (about 0.55 MB
// over the 1.8 MB of an empty Go reactor); measured 2,668,745 bytes, 773,222
// gzipped when it was added. The limits leave room for small changes and
// catch a package that should not be in it.
const (
	fingerprintBytesMax     = 2_800_000
	fingerprintGzipBytesMax = 820_000
)

// TestFingerprintModuleSize reports fingerprint.wasm's size and holds it to
// its limits.
func TestFingerprintModuleSize(t *testing.T) {
	wasm := fingerprintModule(t)
	gz := gzipSize(t, wasm)
	t.Logf("fingerprint.wasm: %d bytes, %d gzipped (gzip -9)", len(wasm), gz)
	if len(wasm) > fingerprintBytesMax {
		t.Errorf("fingerprint.wasm is %d bytes, over %d", len(wasm), fingerprintBytesMax)
	}
	if gz > fingerprintGzipBytesMax {
		t.Errorf("fingerprint.wasm is %d bytes gzipped, over %d", gz, fingerprintGzipBytesMax)
	}
}

// gzipSize is the length of gzip -9 of b, the measure `make wasm` reports.
func gzipSize(t *testing.T, b []byte) int {
	t.Helper()
	cmd := exec.Command("gzip", "-9", "-c")
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gzip -9 (the measure make wasm reports): %v", err)
	}
	return len(out)
}

// TestStampCoversWhatTheModuleIsBuiltFrom: the stamp hashes the guest and
// every package of this module it imports as built for wasip1 (the core,
// the ABI, the protocol, the store's contract), and nothing that is not
// compiled into the module.
func TestStampCoversWhatTheModuleIsBuiltFrom(t *testing.T) {
	checkCovers(t, stamp.Idem,
		[]string{"go.mod", "core/step.go", "wasm/guest/main.go", "wasm/guest/flow.go", "wasm/internal/abi/flow.go",
			"flow/flow.go", "flow/module_wasip1.go", "store/store.go"},
		[]string{"flow/module_native.go", "flow/find_test.go", "executor.go", "wasm/host.go", "fingerprint/fingerprint.go"})
	// fingerprint.wasm: package fingerprint, the core it names its digest
	// with, and the layout; not the core's guest nor its ABI.
	checkCovers(t, stamp.Fingerprint,
		[]string{"go.mod", "fingerprint/fingerprint.go", "fingerprint/number.go", "core/fingerprint.go", "wasm/fpguest/main.go",
			"wasm/internal/fpabi/fpabi.go", "wasm/internal/fpabi/answer.go"},
		[]string{"fingerprint/fuzz_test.go", "wasm/guest/main.go", "wasm/internal/abi/abi.go", "flow/flow.go", "wasm/host.go"})
}

// checkCovers fails unless m's sources hold every file of want and none of not.
func checkCovers(t *testing.T, m stamp.Module, want, not []string) {
	t.Helper()
	paths, err := m.Sources("..")
	if err != nil {
		t.Fatal(err)
	}
	has := map[string]bool{}
	for _, p := range paths {
		has[p] = true
	}
	for _, w := range want {
		if !has[w] {
			t.Errorf("the stamp of %s does not cover %s (it covers %v)", m.Wasm, w, paths)
		}
	}
	for _, n := range not {
		if has[n] {
			t.Errorf("the stamp of %s covers %s, which is not compiled into the module", m.Wasm, n)
		}
	}
}

// TestModuleFresh fails when the embedded idem.wasm was not built from the
// sources as they are now: `make wasm` records the hash of the core's, the
// guest's and the ABI's sources beside the module (idem.wasm.stamp), and this
// recomputes it. It also checks that the stamp is about this very module.
func TestModuleFresh(t *testing.T) { checkFresh(t, stamp.Idem, module) }

// TestFingerprintModuleFresh is TestModuleFresh for fingerprint.wasm: it
// fails when the module was not built from package fingerprint, the core
// and wasm/fpguest as they are now.
func TestFingerprintModuleFresh(t *testing.T) {
	checkFresh(t, stamp.Fingerprint, fingerprintModule(t))
}

// checkFresh fails unless m's stamp describes wasm and the sources as they are.
func checkFresh(t *testing.T, m stamp.Module, wasm []byte) {
	t.Helper()
	name := path.Base(m.Wasm)
	f, err := os.Open(path.Base(m.Stamp))
	if err != nil {
		t.Fatalf("%v: run `make wasm`", err)
	}
	defer f.Close()
	s, err := stamp.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := stamp.ModuleHash(wasm); got != s.Module {
		t.Errorf("the checked-in %s (sha256 %s) is not the module the stamp describes (%s): run `make wasm`", name, got, s.Module)
	}
	sources, err := m.SourcesHash("..")
	if err != nil {
		t.Fatal(err)
	}
	if sources != s.Sources {
		t.Errorf("%s is stale: what it is built from (stamp.Sources: the guest, the packages it imports, go.mod) changed since (sources %s, stamp %s): run `make wasm`", name, sources, s.Sources)
	}
}

// TestSourcesHashSeesEdits shows that the hash TestModuleFresh compares
// moves with any edit of a core source, so that the staleness check can fail.
func TestSourcesHashSeesEdits(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"core", "flow", "wasm/guest"} {
		if err := os.MkdirAll(root+"/"+dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, body string) {
		if err := os.WriteFile(root+"/"+name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hashOf := func(m stamp.Module) string {
		t.Helper()
		h, err := m.SourcesHash(root)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	hash := func() string { t.Helper(); return hashOf(stamp.Idem) }
	write("go.mod", "module github.com/idemkit/idem\n")
	write("wasm/guest/main.go", "package main\n\nimport _ \"github.com/idemkit/idem/core\"\n")
	write("core/step.go", "package core\n")
	write("core/step_test.go", "package core\n")
	write("flow/flow.go", "package flow\n")
	h0 := hash()
	write("core/step_test.go", "package core // tests are not in the module\n")
	write("flow/flow.go", "package flow // not imported by the guest\n")
	if hash() != h0 {
		t.Error("editing a test file, or a package the guest does not import, changed the sources hash")
	}
	write("core/step.go", "package core // an edit\n")
	h1 := hash()
	if h1 == h0 {
		t.Error("editing core/step.go left the sources hash as it was")
	}
	write("wasm/guest/main.go", "package main\n\nimport (\n\t_ \"github.com/idemkit/idem/core\"\n\t_ \"github.com/idemkit/idem/flow\"\n)\n")
	h2 := hash()
	write("flow/flow.go", "package flow // imported now\n")
	if hash() == h2 || h2 == h1 {
		t.Error("a package the guest imports is not in the sources hash")
	}

	// fingerprint.wasm's hash moves with package fingerprint and its guest,
	// and not with the core's guest.
	for _, dir := range []string{"fingerprint", "wasm/fpguest"} {
		if err := os.MkdirAll(root+"/"+dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("wasm/fpguest/main.go", "package main\n\nimport _ \"github.com/idemkit/idem/fingerprint\"\n")
	write("fingerprint/fingerprint.go", "package fingerprint\n\nimport _ \"github.com/idemkit/idem/core\"\n")
	f0 := hashOf(stamp.Fingerprint)
	write("wasm/guest/main.go", "package main // the core's guest\n")
	if hashOf(stamp.Fingerprint) != f0 {
		t.Error("editing the core's guest changed fingerprint.wasm's sources hash")
	}
	write("fingerprint/fingerprint.go", "package fingerprint // an edit\n\nimport _ \"github.com/idemkit/idem/core\"\n")
	f1 := hashOf(stamp.Fingerprint)
	write("core/step.go", "package core // another edit\n")
	f2 := hashOf(stamp.Fingerprint)
	write("wasm/fpguest/main.go", "package main // an edit\n\nimport _ \"github.com/idemkit/idem/fingerprint\"\n")
	if f1 == f0 || f2 == f1 || hashOf(stamp.Fingerprint) == f2 {
		t.Error("an edit of package fingerprint, of the core it imports or of its guest left fingerprint.wasm's sources hash as it was")
	}
}

// versionModule is a hand-written wasm module exporting only
// idem_abi_version, returning 99: a module from another ABI.
var versionModule = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
	0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f, // type section: () -> i32
	0x03, 0x02, 0x01, 0x00, // function section: one function of type 0
	0x07, 0x14, 0x01, 0x10, // export section: one export, a 16-byte name
	'i', 'd', 'e', 'm', '_', 'a', 'b', 'i', '_', 'v', 'e', 'r', 's', 'i', 'o', 'n',
	0x00, 0x00, // a function, index 0
	0x0a, 0x07, 0x01, 0x05, 0x00, 0x41, 0xe3, 0x00, 0x0b, // code: i32.const 99, end
}

// TestABIVersionMismatch: a module of another ABI version, or one without a
// version, is refused with ErrABIVersion and a message naming both versions.
func TestABIVersionMismatch(t *testing.T) {
	ctx := context.Background()
	_, err := newHost(ctx, versionModule, Options{})
	if !errors.Is(err, ErrABIVersion) {
		t.Fatalf("newHost(ABI v99 module) = %v, want ErrABIVersion", err)
	}
	if !strings.Contains(err.Error(), "v99") || !strings.Contains(err.Error(), fmt.Sprintf("v%d", abi.Version)) {
		t.Errorf("the error should name both versions: %v", err)
	}
	noVersion := append([]byte(nil), versionModule...)
	copy(noVersion[23:], "idem_abi_xxxxxxx") // rename the export (its name starts at byte 23)
	if _, err := newHost(ctx, noVersion, Options{}); !errors.Is(err, ErrABIVersion) {
		t.Fatalf("newHost(module without a version) = %v, want ErrABIVersion", err)
	}
}

// TestRefusedErrorIdentity: a refused event comes back as an error that
// errors.Is-matches the core's sentinel, with the native message, and
// leaves the record as it was.
func TestRefusedErrorIdentity(t *testing.T) {
	h := testHost(t)
	p := core.PolicyDefault()
	rec := core.Record{Scope: scenario.Scope}
	ev := core.Event{Kind: core.EventReserve, Now: scenario.T0, Token: 1, Fingerprint: core.Fingerprint{1}}
	if _, err := h.Step(&rec, &ev, &p); err != nil {
		t.Fatal(err)
	}
	before := rec
	bad := core.Event{Kind: core.EventComplete, Now: scenario.T0, Token: 1, Response: core.Response{StatusCode: 204, Body: []byte("x")}}
	_, errW := h.Step(&rec, &bad, &p)
	nativeRec := before
	_, errN := core.Step(&nativeRec, &bad, &p)
	if !errors.Is(errW, core.ErrResponseInvalid) || !core.Refused(errW) {
		t.Fatalf("wasm error %v does not match core.ErrResponseInvalid", errW)
	}
	if errW.Error() != errN.Error() {
		t.Fatalf("wasm error %q, native %q", errW, errN)
	}
	if errors.Is(errW, core.ErrResponseTooLarge) {
		t.Fatal("the error matches a sentinel it does not wrap")
	}
	if !reflect.DeepEqual(rec, before) {
		t.Fatal("a refused event changed the record")
	}
}

func reflectDeepEqualRecord(a, b core.Record) bool { return reflect.DeepEqual(a, b) }
