package wasmcore

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
)

// The host's own duties (ABI.md), tested against the fake guest
// (fakeguest_test.go), which does what each test asks of it.

func fakeHost(t *testing.T, wasm []byte) *Host {
	t.Helper()
	h, err := newHost(context.Background(), wasm, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

// fakeStep steps the fake guest with command cmd; key sets the request's
// size (the scope's key is the one field of variable length).
func fakeStep(h *Host, cmd int, key string) (core.Transition, core.Record, error) {
	p := core.Policy{LeaseDuration: time.Duration(cmd)}
	rec := core.Record{Scope: core.Scope{Key: key}}
	ev := core.Event{}
	res, err := h.Step(&rec, &ev, &p)
	return res, rec, err
}

// fakeState is what fakeCanned reports: the instance's idem_step and
// idem_input calls, the input address and the size of the request.
type fakeState struct{ steps, inputs, addr, size uint64 }

func stateOf(res core.Transition) fakeState {
	return fakeState{uint64(res.Decision.Token), uint64(res.Decision.RetryAfter), res.Write.ExpectVersion, uint64(res.Write.ExpectToken)}
}

func mustCanned(t *testing.T, h *Host, key string) fakeState {
	t.Helper()
	res, rec, err := fakeStep(h, fakeCanned, key)
	if err != nil || res.Decision.Kind != 1 {
		t.Fatalf("a canned step: %+v, %v", res, err)
	}
	if !reflect.DeepEqual(rec, core.Record{Scope: core.Scope{Key: key}}) {
		t.Fatalf("an answer without changes changed the record: %s", rec.Describe())
	}
	return stateOf(res)
}

// requestSize is the size of the request fakeStep sends with key.
func requestSize(key string) uint64 { return uint64(252 + len(key)) }

// TestFakeGuestAccepted: the host calls _initialize before
// idem_abi_version (the fake answers 0 otherwise) and idem_abi_version
// before any step (the fake traps otherwise), and passes idem_step the size
// of the request it wrote.
func TestFakeGuestAccepted(t *testing.T) {
	h := fakeHost(t, fakeGuest())
	if got := mustCanned(t, h, "k"); got != (fakeState{steps: 1, inputs: 1, addr: 1024, size: requestSize("k")}) {
		t.Fatalf("first step: %+v", got)
	}
}

// TestTrapDiscardsInstance: a trap, or a proc_exit, in a step is ErrTrap
// (not a refusal), leaves the record alone, and the next step runs on a
// fresh instance: its step count starts again.
func TestTrapDiscardsInstance(t *testing.T) {
	h := fakeHost(t, fakeGuest())
	for _, cmd := range []int{fakeTrap, fakeExit} {
		a, b := mustCanned(t, h, "k"), mustCanned(t, h, "k")
		if a.steps == 0 || b.steps != a.steps+1 {
			t.Fatalf("two steps on one instance counted %d, then %d", a.steps, b.steps)
		}
		res, rec, err := fakeStep(h, cmd, "k")
		if !errors.Is(err, ErrTrap) || core.Refused(err) || errors.Is(err, ErrMalformedAnswer) {
			t.Fatalf("command %d: %v, want ErrTrap and no refusal", cmd, err)
		}
		if res != (core.Transition{}) || !reflect.DeepEqual(rec, core.Record{Scope: core.Scope{Key: "k"}}) {
			t.Fatalf("command %d: a trap returned %+v and left %s", cmd, res, rec.Describe())
		}
		if got := mustCanned(t, h, "k"); got.steps != 1 || got.inputs != 1 {
			t.Fatalf("command %d: the step after a trap ran on an instance with %d steps and %d input calls, want a fresh one", cmd, got.steps, got.inputs)
		}
	}
}

// TestInputBufferCached: the host calls idem_input only for a request
// larger than any before on the instance, and then writes at the address
// that call returned (the fake returns a new one every time).
func TestInputBufferCached(t *testing.T) {
	h := fakeHost(t, fakeGuest())
	first := mustCanned(t, h, "k")
	if again := mustCanned(t, h, "k"); again.inputs != 1 || again.addr != first.addr {
		t.Fatalf("a request of the same size called idem_input again: %+v after %+v", again, first)
	}
	larger := mustCanned(t, h, strings.Repeat("k", 100))
	if larger.inputs != 2 || larger.addr == first.addr || larger.size != requestSize(strings.Repeat("k", 100)) {
		t.Fatalf("a larger request: %+v after %+v, want a second idem_input call and its address", larger, first)
	}
	// One byte more than the buffer holds is a larger request too (the
	// fake traps on a step larger than its buffer).
	oneMore := mustCanned(t, h, strings.Repeat("k", 101))
	if oneMore.inputs != 3 || oneMore.addr == larger.addr || oneMore.size != larger.size+1 {
		t.Fatalf("a request one byte larger: %+v after %+v, want a third idem_input call and its address", oneMore, larger)
	}
	if smaller := mustCanned(t, h, "kk"); smaller.inputs != 3 || smaller.addr != oneMore.addr || smaller.size != requestSize("kk") {
		t.Fatalf("a smaller request: %+v, want the buffer of %+v and its own size", smaller, oneMore)
	}
	// A request larger than the guest's memory: idem_input grows it.
	huge := strings.Repeat("k", 200<<10)
	if got := mustCanned(t, h, huge); got.inputs != 4 || got.size != requestSize(huge) {
		t.Fatalf("a 200 KiB request: %+v", got)
	}
}

// TestMemoryGrowsDuringStep: an answer in memory the guest grew during
// idem_step is read.
func TestMemoryGrowsDuringStep(t *testing.T) {
	h := fakeHost(t, fakeGuest())
	for i := 1; i <= 3; i++ {
		res, _, err := fakeStep(h, fakeGrow, "k")
		if err != nil || stateOf(res) != (fakeState{steps: uint64(i), inputs: 1, addr: 1024, size: requestSize("k")}) {
			t.Fatalf("step %d growing the memory: %+v, %v", i, res, err)
		}
	}
}

// TestAnswerOutsideMemory: an answer whose address and length point outside
// the guest's memory is ErrMalformedAnswer, the record is unchanged, and
// the instance is kept (it did not trap).
func TestAnswerOutsideMemory(t *testing.T) {
	h := fakeHost(t, fakeGuest())
	before := mustCanned(t, h, "k")
	res, rec, err := fakeStep(h, fakeOutside, "k")
	if !errors.Is(err, ErrMalformedAnswer) || errors.Is(err, ErrTrap) || core.Refused(err) {
		t.Fatalf("an answer outside the memory: %v, want ErrMalformedAnswer", err)
	}
	if res != (core.Transition{}) || !reflect.DeepEqual(rec, core.Record{Scope: core.Scope{Key: "k"}}) {
		t.Fatalf("a malformed answer returned %+v and left %s", res, rec.Describe())
	}
	if got := mustCanned(t, h, "k"); got.steps != before.steps+2 {
		t.Fatalf("after a malformed answer the instance has %d steps, want the same instance (%d)", got.steps, before.steps+2)
	}
}

// TestAnswerAtEndOfMemory: an answer that ends exactly at the end of the
// guest's memory is read; one whose last byte is one past it is
// ErrMalformedAnswer, leaves the record alone, and keeps the instance.
func TestAnswerAtEndOfMemory(t *testing.T) {
	h := fakeHost(t, fakeGuest())
	res, _, err := fakeStep(h, fakeAtEnd, "k")
	if err != nil || stateOf(res) != (fakeState{steps: 1, inputs: 1, addr: 1024, size: requestSize("k")}) {
		t.Fatalf("an answer at the end of the memory: %+v, %v", res, err)
	}
	res, rec, err := fakeStep(h, fakePastEnd, "k")
	if !errors.Is(err, ErrMalformedAnswer) || errors.Is(err, ErrTrap) || core.Refused(err) {
		t.Fatalf("an answer one byte past the end of the memory: %+v, %v, want ErrMalformedAnswer", res, err)
	}
	if res != (core.Transition{}) || !reflect.DeepEqual(rec, core.Record{Scope: core.Scope{Key: "k"}}) {
		t.Fatalf("a malformed answer returned %+v and left %s", res, rec.Describe())
	}
	if got := mustCanned(t, h, "k"); got.steps != 3 {
		t.Fatalf("after a malformed answer the instance has %d steps, want the same instance (3)", got.steps)
	}
}

// TestModuleWithoutExports: a module that lacks one of the ABI's exports is
// refused with ErrABIVersion; one without _initialize is not initialised,
// and the fake then answers version 0, which is refused too.
func TestModuleWithoutExports(t *testing.T) {
	for _, export := range []string{"idem_abi_version", "idem_input", "idem_step", "idem_flow", "memory", "_initialize"} {
		wasm := renameExport(t, fakeGuest(), export, strings.Repeat("x", len(export)))
		h, err := newHost(context.Background(), wasm, Options{})
		if err == nil {
			h.Close(context.Background())
			t.Fatalf("a module without %s was accepted", export)
		}
		if !errors.Is(err, ErrABIVersion) {
			t.Fatalf("a module without %s: %v, want ErrABIVersion", export, err)
		}
		if export == "_initialize" && !strings.Contains(err.Error(), "v0") {
			t.Fatalf("a module without _initialize: %v, want the version it answered (0)", err)
		}
	}
}

// TestInputBufferTraps: an input buffer that idem_input placed outside the
// guest's memory, or a trap in idem_input, is a trap (the guest is broken),
// which discards the instance.
func TestInputBufferTraps(t *testing.T) {
	h := fakeHost(t, fakeGuest())
	for _, size := range []uint64{fakeBadInputSize, fakeBadInputSize + 1} {
		mustCanned(t, h, "k")
		key := strings.Repeat("k", int(size-requestSize("")))
		_, rec, err := fakeStep(h, fakeCanned, key)
		if !errors.Is(err, ErrTrap) {
			t.Fatalf("a %d-byte request: %v, want ErrTrap", size, err)
		}
		if size == fakeBadInputSize && !strings.Contains(err.Error(), "outside the module's memory") {
			t.Fatalf("an input buffer outside the memory: %v", err)
		}
		if rec.Scope.Key != key || rec.Status != 0 {
			t.Fatalf("the record changed: %s", rec.Describe())
		}
		if got := mustCanned(t, h, "k"); got.steps != 1 {
			t.Fatalf("after the trap the instance has %d steps, want a fresh one (the old one had 1)", got.steps)
		}
	}
}

// TestLargeRequestNotKept: the host drops its copy of a request over 1 MiB
// after the step, so that a rare large response is not pinned in every
// pooled instance; a small one's buffer is kept for the next step.
func TestLargeRequestNotKept(t *testing.T) {
	h := fakeHost(t, fakeGuest())
	pooled := func() *instance {
		inst := <-h.idle
		h.idle <- inst
		return inst
	}
	mustCanned(t, h, "k")
	if c := cap(pooled().request); c == 0 || c > 1<<20 {
		t.Fatalf("after a small step the host keeps a %d-byte request buffer", c)
	}
	mustCanned(t, h, strings.Repeat("k", 1<<20+1))
	if r := pooled().request; r != nil {
		t.Fatalf("after a 1 MiB step the host keeps a %d-byte request buffer", cap(r))
	}
}
