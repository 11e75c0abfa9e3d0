package wasmcore

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/scenario"
)

// closeTestStep is a Reserve on an absent record: a step that succeeds, so
// that an error from it can only come from the host.
func closeTestStep(h *Host) (core.Transition, error) {
	p := core.PolicyDefault()
	rec := core.Record{Scope: scenario.Scope}
	ev := core.Event{Kind: core.EventReserve, Now: scenario.T0, Token: 1, Fingerprint: core.Fingerprint{1}}
	return h.Step(&rec, &ev, &p)
}

// TestStepAfterClose: a Step after Close returns ErrClosed, as documented,
// not ErrTrap (the pooled instance is closed with the runtime), and a
// second Close is harmless.
func TestStepAfterClose(t *testing.T) {
	ctx := context.Background()
	testHost(t) // fills sharedCacheDir
	h, err := NewWithOptions(ctx, Options{CompilationCacheDir: sharedCacheDir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := closeTestStep(h); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		_, err := closeTestStep(h)
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("step %d after Close = %v, want ErrClosed", i, err)
		}
		if errors.Is(err, ErrTrap) || core.Refused(err) {
			t.Fatalf("step %d after Close = %v: ErrClosed must be neither a trap nor a refusal", i, err)
		}
	}
	if err := h.Close(ctx); err != nil {
		t.Fatalf("a second Close = %v", err)
	}
}

// TestStepDuringClose: goroutines step while another closes the host (run
// with -race). Each step either succeeds with the native answer or returns
// ErrClosed, never a trap or another error, and once Close has returned
// every step returns ErrClosed.
func TestStepDuringClose(t *testing.T) {
	ctx := context.Background()
	testHost(t) // fills sharedCacheDir
	// Round 0 is New's host, whose Close also releases the compiled code
	// (no cache); the others share the compilation cache, to be quick.
	for round := 0; round < 3; round++ {
		opts := Options{}
		if round > 0 {
			opts.CompilationCacheDir = sharedCacheDir
		}
		h, err := NewWithOptions(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg      sync.WaitGroup
			started sync.WaitGroup
			mu      sync.Mutex
			bad     []error
			ok      int
		)
		for g := 0; g < 4; g++ {
			wg.Add(1)
			started.Add(1)
			go func() {
				defer wg.Done()
				first := true
				for {
					res, err := closeTestStep(h)
					if first {
						started.Done()
						first = false
					}
					mu.Lock()
					switch {
					case errors.Is(err, ErrClosed):
						mu.Unlock()
						return
					case err != nil:
						bad = append(bad, err)
					case res.Decision.Kind != core.DecisionExecute:
						bad = append(bad, errors.New("decision "+res.Decision.Kind.String()))
					default:
						ok++
					}
					mu.Unlock()
				}
			}()
		}
		started.Wait() // every goroutine has stepped once: Close lands among steps
		if err := h.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := closeTestStep(h); !errors.Is(err, ErrClosed) {
			t.Fatalf("round %d: a step after Close returned = %v, want ErrClosed", round, err)
		}
		wg.Wait()
		for _, err := range bad {
			t.Errorf("round %d: a step during Close: %v", round, err)
		}
		if ok < 4 {
			t.Fatalf("round %d: only %d steps succeeded before Close", round, ok)
		}
	}
}
