package wasmcore

import (
	"context"
	"os"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/idemkit/idem/core"
)

var (
	sharedHostOnce sync.Once
	sharedHost     *Host
	sharedHostErr  error
	// sharedCacheDir is sharedHost's Options.CompilationCacheDir, which
	// TestCompilationCache reopens; TestMain removes it.
	sharedCacheDir string
)

// testHost is one Host over the embedded module for the whole test binary:
// compiling the module is the slow part, and sharing the Host also tests
// that it can be shared. It keeps its compiled code in sharedCacheDir, so
// that TestCompilationCache gets a cached host without a second compile.
func testHost(t testing.TB) *Host {
	t.Helper()
	sharedHostOnce.Do(func() {
		if sharedCacheDir, sharedHostErr = os.MkdirTemp("", "idem-wasm-cache-"); sharedHostErr != nil {
			return
		}
		sharedHost, sharedHostErr = NewWithOptions(context.Background(), Options{CompilationCacheDir: sharedCacheDir})
	})
	if sharedHostErr != nil {
		t.Fatal(sharedHostErr)
	}
	return sharedHost
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedCacheDir != "" {
		os.RemoveAll(sharedCacheDir)
	}
	os.Exit(code)
}

// The signature check the simulator's flag relies on: Host.Step is a
// drop-in for core.Step.
var _ func(*core.Record, *core.Event, *core.Policy) (core.Transition, error) = (*Host)(nil).Step

// TestDifferential steps rapid's cases natively and through wasm: every
// Transition, record (compared with reflect.DeepEqual: times with their
// locations, nil and empty slices apart) and error must be the same.
func TestDifferential(t *testing.T) {
	h := testHost(t)
	gen := genCase(genOptions{bodyBytesMax: 256 << 10, locations: true, kind200: true})
	rapid.Check(t, func(t *rapid.T) {
		c := gen.Draw(t, "case")
		if d := runCase(h.Step, &c); d != "" {
			t.Fatal(d)
		}
	})
}

// TestGoldenThroughWasm replays core/testdata through the wasm core: every
// step must print what the scenario expects, and match the native step.
func TestGoldenThroughWasm(t *testing.T) {
	h := testHost(t)
	scenarios, err := readGoldenScenarios()
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, s := range scenarios {
		t.Run(s.File, func(t *testing.T) {
			p := core.PolicyDefault()
			cur := core.Record{Scope: goldenScope}
			for _, cmd := range s.Commands {
				switch {
				case cmd.Policy != nil:
					p = *cmd.Policy
				case cmd.Event != nil:
					start := cur
					if cmd.Scope != nil {
						start = core.Record{Scope: *cmd.Scope}
					}
					next, d := compareStep(core.Step, h.Step, &start, cmd.Event, &p)
					if d != "" {
						t.Fatalf("%s:%d %q: wasm differs from native:\n%s", cmd.File, cmd.LineNo, cmd.Line, d)
					}
					rec := start
					res, err := h.Step(&rec, cmd.Event, &p)
					if got := describeStep(&cmd, res, &rec, err); got != cmd.Expected {
						t.Fatalf("%s:%d %q through wasm:\n got: %s\nwant: %s", cmd.File, cmd.LineNo, cmd.Line, got, cmd.Expected)
					}
					if cmd.Scope == nil {
						cur = next
					}
					steps++
				default: // record
					if got := cur.Describe(); got != cmd.Expected {
						t.Fatalf("%s:%d: record %s, want %s", cmd.File, cmd.LineNo, got, cmd.Expected)
					}
				}
			}
		})
	}
	if steps < 40 {
		t.Fatalf("only %d golden steps replayed: is the scenario reader broken?", steps)
	}
}

// TestConcurrentSteps steps from many goroutines at once through one Host:
// each gets an instance of its own from the pool (run with -race).
func TestConcurrentSteps(t *testing.T) {
	h := testHost(t)
	gen := genCase(genOptions{bodyBytesMax: 4 << 10})
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				c := gen.Example(g*1000 + i)
				if d := runCase(h.Step, &c); d != "" {
					errs <- d
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for d := range errs {
		t.Fatal(d)
	}
}
