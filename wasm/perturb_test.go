package wasmcore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/scenario"
)

var (
	perturbedOnce sync.Once
	perturbedHost *Host
	perturbedErr  error
)

// testPerturbedHost builds the guest with -tags perturb (see
// guest/perturb_on.go: one decision changed, and a trap on event kind 200)
// into a temporary directory, once per test binary, and hosts it.
func testPerturbedHost(t *testing.T) *Host {
	t.Helper()
	perturbedOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			perturbedErr = err // the tests run under the go command, which puts itself on PATH
			return
		}
		dir, err := os.MkdirTemp("", "idem-perturbed-")
		if err != nil {
			perturbedErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "perturbed.wasm")
		cmd := exec.Command(goBin, "build", "-tags", "perturb", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w", "-o", out, "./guest")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		if msg, err := cmd.CombinedOutput(); err != nil {
			perturbedErr = errors.New("building the perturbed guest: " + err.Error() + "\n" + string(msg))
			return
		}
		wasm, err := os.ReadFile(out)
		if err != nil {
			perturbedErr = err
			return
		}
		perturbedHost, perturbedErr = newHost(context.Background(), wasm, Options{})
	})
	if perturbedErr != nil {
		t.Fatal(perturbedErr)
	}
	return perturbedHost
}

// TestDifferentialCatchesPerturbation shows the differential check can
// fail: against a guest that answers Reconciling where the core answers
// InFlight, the same generator and comparison as TestDifferential find a
// difference within the first cases, and it is that decision.
func TestDifferentialCatchesPerturbation(t *testing.T) {
	h := testPerturbedHost(t)
	// kind200 off: a trap would be caught too, but this test is about the
	// changed decision.
	gen := genCase(genOptions{bodyBytesMax: 4 << 10})
	for seed := 0; seed < 200; seed++ {
		c := gen.Example(seed)
		d := runCase(h.Step, &c)
		if d == "" {
			continue
		}
		if !strings.Contains(d, "native {Decision:{Kind:in_flight") || !strings.Contains(d, "wasm {Decision:{Kind:reconciling") {
			t.Fatalf("seed %d: the difference found is not the perturbed decision (in_flight -> reconciling):\n%s", seed, d)
		}
		t.Logf("seed %d caught the perturbed guest:\n%s", seed, d)
		return
	}
	t.Fatal("200 generated cases did not tell the perturbed guest from the native core")
}

// TestTrapReplacesInstance: a guest that traps mid-step gives the caller an
// ErrTrap error and an unchanged record, and the next step runs on a fresh
// instance and answers as the native core.
func TestTrapReplacesInstance(t *testing.T) {
	h := testPerturbedHost(t)
	p := core.PolicyDefault()
	rec := core.Record{Scope: scenario.Scope}
	trap := core.Event{Kind: 200, Now: scenario.T0}
	_, err := h.Step(&rec, &trap, &p)
	if !errors.Is(err, ErrTrap) {
		t.Fatalf("Step(kind 200) on the perturbed guest = %v, want ErrTrap", err)
	}
	if core.Refused(err) {
		t.Fatal("a trap must not look like a refused event")
	}
	if !reflectDeepEqualRecord(rec, core.Record{Scope: scenario.Scope}) {
		t.Fatalf("a trap changed the record: %s", rec.Describe())
	}
	for i := 0; i < 3; i++ { // more than one: the pool must not hand back the dead instance
		ev := core.Event{Kind: core.EventReserve, Now: scenario.T0, Token: 1, Fingerprint: core.Fingerprint{1}}
		r := core.Record{Scope: scenario.Scope}
		res, err := h.Step(&r, &ev, &p)
		if err != nil || res.Decision.Kind != core.DecisionExecute {
			t.Fatalf("step %d after the trap: %v, %v", i, res, err)
		}
	}
}
