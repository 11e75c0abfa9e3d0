//go:build wasip1

// Command guest is the idem core as a WebAssembly reactor
// (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared): it exports core.Step over
// the byte layout of wasm/internal/abi, specified in wasm/ABI.md. It exports
// nothing that does I/O. `make wasm` builds it into wasm/idem.wasm.
package main

import (
	"unsafe"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/wasm/internal/abi"
)

// main is not run: a reactor is initialised with _initialize and then
// called through its exports.
func main() {}

// input is the buffer the host writes a request into, and answer the one the
// guest writes its answer into. Both belong to the guest and are reused, so
// that a step allocates neither; Go's collector does not move objects, so
// their addresses stay valid while they are referenced from here.
var (
	input  []byte
	answer []byte
)

// idemABIVersion is how a host learns the ABI before calling anything else.
//
//go:wasmexport idem_abi_version
func idemABIVersion() uint32 { return abi.Version }

// idemInput returns the address of the input buffer, grown to at least
// size bytes. The address stays valid until the next idem_input call.
//
//go:wasmexport idem_input
func idemInput(size uint32) uint32 {
	if uint32(cap(input)) < size {
		input = make([]byte, size)
	}
	input = input[:cap(input)]
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input))))
}

// idemStep steps the request in the first size bytes of the input buffer
// and returns (address << 32) | length of the answer, valid until the next
// idem_step call.
//
//go:wasmexport idem_step
func idemStep(size uint32) uint64 {
	answer = stepImpl(answer[:0], size)
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(answer))))<<32 | uint64(len(answer))
}

// stepImpl is step, or the JSON encoding of json_on.go in the module built
// only to measure it (BENCHMARKS.md, "wasm").
var stepImpl = step

func step(dst []byte, size uint32) []byte {
	if uint64(size) > uint64(len(input)) {
		return abi.AppendRefused(dst, abi.ErrMalformedRequest)
	}
	var (
		rec core.Record
		ev  core.Event
		p   core.Policy
	)
	if err := abi.DecodeRequest(input[:size], &rec, &ev, &p); err != nil {
		return abi.AppendRefused(dst, err)
	}
	trap(&ev)
	before := rec
	res, err := core.Step(&rec, &ev, &p)
	if err != nil {
		return abi.AppendRefused(dst, err)
	}
	perturb(&res, &ev)
	return abi.AppendOK(dst, &res, &before, &rec, &ev)
}
