// Package wasmcore runs the idem core compiled to WebAssembly (wasm/guest,
// embedded as idem.wasm) under wazero, with the same API as the native core:
//
//	h, err := wasmcore.New(ctx)
//	...
//	step := h.Step // in place of core.Step
//	res, err := step(&rec, &ev, &policy)
//
// Host.Step gives the same Transition, changes the record in the same way and
// returns errors that errors.Is-match the same core sentinels with the same
// message as core.Step; Host.BeginFlow runs the executor's protocol (package
// flow) in the module, a Flow with flow.Flow's calls, effect for effect the
// native one. The differential tests of this package hold both to that. It exists so that the one implementation of the lifecycle can be
// embedded by runtimes that are not Go; in a Go program the native core is
// faster (BENCHMARKS.md, "wasm").
//
// The ABI between host and module is wasm/ABI.md.
package wasmcore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/wasm/internal/abi"
)

// module is the guest, built by `make wasm`; module_test.go fails when it is
// older than the sources it was built from.
//
//go:embed idem.wasm
var module []byte

// ABIVersion is the ABI this host speaks (wasm/ABI.md).
const ABIVersion = abi.Version

var (
	// ErrABIVersion: the module speaks another ABI version than this host,
	// or exports no version at all.
	ErrABIVersion = errors.New("idem/wasm: module ABI version mismatch")
	// ErrTrap: the module trapped (or exited) during a step. The instance
	// is discarded, and the next step runs on a fresh one.
	ErrTrap = errors.New("idem/wasm: the module trapped")
	// ErrMalformedAnswer: the module answered bytes the host cannot decode.
	ErrMalformedAnswer = abi.ErrMalformedAnswer
	// ErrClosed: Step was called after Close.
	ErrClosed = errors.New("idem/wasm: host is closed")
)

// Host steps records through the wasm core. It compiles the module once and
// keeps a pool of instances, each used by one goroutine at a time, so it is
// safe for concurrent use. The zero Host is not usable: call New.
type Host struct {
	runtime  wazero.Runtime
	cache    wazero.CompilationCache // nil without Options.CompilationCacheDir
	compiled wazero.CompiledModule
	config   wazero.ModuleConfig
	// idle holds instances ready for a step. Its capacity bounds how many
	// are kept between steps; more may exist while more goroutines step at
	// once, and those are closed when the pool is full.
	idle chan *instance

	// mu is held for reading by every Step and for writing by Close, so
	// that Close waits for the steps in flight before it releases the
	// runtime (and, without a cache, the compiled code a step is running),
	// and every Step that starts after it sees closed.
	mu     sync.RWMutex
	closed bool
}

// Options configure NewWithOptions. The zero Options are New's.
type Options struct {
	// CompilationCacheDir, if not empty, is a directory where wazero keeps
	// the machine code it compiles the module to, and looks for it first:
	// a process that restarts with the same directory, module and wazero
	// version loads the code instead of compiling it again (BENCHMARKS.md,
	// "wasm": compiling takes over a second, loading tens of
	// milliseconds). The directory is created if missing; it may be shared
	// by hosts and processes.
	CompilationCacheDir string

	// interpreter runs the module in wazero's interpreter instead of
	// compiling it: only for the benchmarks that compare the two.
	interpreter bool
}

// New compiles the embedded module and checks its ABI version by
// instantiating it once.
func New(ctx context.Context) (*Host, error) { return newHost(ctx, module, Options{}) }

// NewWithOptions is New with options.
func NewWithOptions(ctx context.Context, opts Options) (*Host, error) {
	return newHost(ctx, module, opts)
}

// newHost is NewWithOptions for another module: tests use it for a
// perturbed build.
func newHost(ctx context.Context, wasm []byte, opts Options) (*Host, error) {
	config := wazero.NewRuntimeConfig()
	if opts.interpreter {
		config = wazero.NewRuntimeConfigInterpreter()
	}
	var cache wazero.CompilationCache
	if opts.CompilationCacheDir != "" {
		var err error
		if cache, err = wazero.NewCompilationCacheWithDir(opts.CompilationCacheDir); err != nil {
			return nil, fmt.Errorf("idem/wasm: opening the compilation cache: %w", err)
		}
		config = config.WithCompilationCache(cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, config)
	closeAll := func() {
		rt.Close(ctx)
		if cache != nil {
			cache.Close(ctx)
		}
	}
	// The Go runtime inside the module imports WASI for its clock, its
	// random seed and its crash message; the core itself performs no I/O.
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		closeAll()
		return nil, fmt.Errorf("idem/wasm: instantiating WASI: %w", err)
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("idem/wasm: compiling the module: %w", err)
	}
	h := &Host{
		runtime:  rt,
		cache:    cache,
		compiled: compiled,
		// A reactor: _initialize starts the Go runtime, no _start. An
		// empty name lets several instances of the module coexist.
		config: wazero.NewModuleConfig().WithName("").WithStartFunctions(),
		idle:   make(chan *instance, runtime.GOMAXPROCS(0)),
	}
	inst, err := h.instantiate(ctx)
	if err != nil {
		closeAll()
		return nil, err
	}
	h.idle <- inst
	return h, nil
}

// Close waits for the steps in flight, then releases the runtime and every
// instance. Steps after Close return ErrClosed; closing again does nothing.
func (h *Host) Close(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	err := h.runtime.Close(ctx)
	if h.cache != nil {
		err = errors.Join(err, h.cache.Close(ctx))
	}
	return err
}

// Step is core.Step through the wasm module, with its signature, so that
// `step := h.Step` replaces `step := core.Step`. On an error from the core
// (a refused event) rec is unchanged and the error unwraps to the core's
// sentinel; on a trap it is unchanged and the error wraps ErrTrap.
func (h *Host) Step(rec *core.Record, ev *core.Event, p *core.Policy) (core.Transition, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.closed {
		return core.Transition{}, ErrClosed
	}
	ctx := context.Background()
	inst, err := h.get(ctx)
	if err != nil {
		return core.Transition{}, err
	}
	res, err := inst.step(ctx, rec, ev, p)
	if errors.Is(err, ErrTrap) {
		// The module's state is unknown after a trap: never reuse it.
		inst.mod.Close(ctx)
		return res, err
	}
	h.put(ctx, inst)
	return res, err
}

func (h *Host) get(ctx context.Context) (*instance, error) {
	select {
	case inst := <-h.idle:
		return inst, nil
	default:
	}
	return h.instantiate(ctx)
}

func (h *Host) put(ctx context.Context, inst *instance) {
	select {
	case h.idle <- inst:
	default:
		inst.mod.Close(ctx)
	}
}

// instance is one instantiated module with the state a step reuses.
type instance struct {
	mod      api.Module
	mem      api.Memory
	input    api.Function
	stepFunc api.Function
	flowFunc api.Function
	stack    []uint64 // parameters and results of a call, reused
	request  []byte   // the encoded request, reused
	// inputAddr and inputBytes are the guest's input buffer, as idem_input
	// last returned it: a step calls idem_input only when it needs more.
	inputAddr, inputBytes uint32
}

func (h *Host) instantiate(ctx context.Context) (*instance, error) {
	mod, err := h.runtime.InstantiateModule(ctx, h.compiled, h.config)
	if err != nil {
		return nil, fmt.Errorf("idem/wasm: instantiating the module: %w", err)
	}
	inst, err := newInstance(ctx, mod)
	if err != nil {
		mod.Close(ctx)
		return nil, err
	}
	return inst, nil
}

func newInstance(ctx context.Context, mod api.Module) (*instance, error) {
	// The version first, before anything whose meaning depends on it.
	version := mod.ExportedFunction(abi.ExportVersion)
	if version == nil {
		return nil, fmt.Errorf("%w: the module exports no %s; this host speaks ABI v%d", ErrABIVersion, abi.ExportVersion, abi.Version)
	}
	if init := mod.ExportedFunction("_initialize"); init != nil {
		if _, err := init.Call(ctx); err != nil {
			return nil, fmt.Errorf("idem/wasm: initialising the module: %w", err)
		}
	}
	out, err := version.Call(ctx)
	if err != nil {
		return nil, fmt.Errorf("idem/wasm: reading the module's ABI version: %w", err)
	}
	if got := uint32(out[0]); got != abi.Version {
		return nil, fmt.Errorf("%w: the module speaks ABI v%d, this host speaks v%d; rebuild the module or upgrade the host", ErrABIVersion, got, abi.Version)
	}
	inst := &instance{
		mod:      mod,
		mem:      mod.ExportedMemory(abi.ExportMemory),
		input:    mod.ExportedFunction(abi.ExportInput),
		stepFunc: mod.ExportedFunction(abi.ExportStep),
		flowFunc: mod.ExportedFunction(abi.ExportFlow),
		stack:    make([]uint64, 1),
	}
	if inst.mem == nil || inst.input == nil || inst.stepFunc == nil || inst.flowFunc == nil {
		return nil, fmt.Errorf("%w: the module claims ABI v%d but lacks the export %s, %s, %s or %s", ErrABIVersion, abi.Version, abi.ExportInput, abi.ExportStep, abi.ExportFlow, abi.ExportMemory)
	}
	return inst, nil
}

// step encodes the request, writes it into the guest, calls idem_step and
// decodes the answer.
func (inst *instance) step(ctx context.Context, rec *core.Record, ev *core.Event, p *core.Policy) (core.Transition, error) {
	inst.request = abi.AppendRequest(inst.request[:0], rec, ev, p)
	answer, err := inst.exchange(ctx, inst.stepFunc, abi.ExportStep)
	if err != nil {
		return core.Transition{}, err
	}
	return abi.ApplyAnswer(answer, rec, ev)
}

// exchange writes inst.request into the guest's input buffer, calls fn
// (the export name) with its size and returns the answer: a view of the
// guest's memory, valid until the next call.
func (inst *instance) exchange(ctx context.Context, fn api.Function, name string) ([]byte, error) {
	n := uint32(len(inst.request))
	if uint64(len(inst.request)) != uint64(n) {
		return nil, fmt.Errorf("idem/wasm: a %d-byte request does not fit a 32-bit address space", len(inst.request))
	}
	if n > inst.inputBytes {
		inst.stack[0] = uint64(n)
		if err := inst.input.CallWithStack(ctx, inst.stack); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrTrap, abi.ExportInput, err)
		}
		inst.inputAddr, inst.inputBytes = uint32(inst.stack[0]), n
	}
	if !inst.mem.Write(inst.inputAddr, inst.request) {
		return nil, fmt.Errorf("%w: input buffer at %#x+%d is outside the module's memory", ErrTrap, inst.inputAddr, n)
	}
	// Drop a large request's copy on the host side: a rare 1 MiB response
	// should not stay pinned in every pooled instance.
	if cap(inst.request) > 1<<20 {
		inst.request = nil
	}
	inst.stack[0] = uint64(n)
	if err := fn.CallWithStack(ctx, inst.stack); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTrap, name, err)
	}
	addr, size := uint32(inst.stack[0]>>32), uint32(inst.stack[0])
	answer, ok := inst.mem.Read(addr, size)
	if !ok {
		return nil, fmt.Errorf("%w: answer at %#x+%d is outside the module's memory", ErrMalformedAnswer, addr, size)
	}
	return answer, nil
}
