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
