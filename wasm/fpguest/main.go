//go:build wasip1

// Command fpguest is package fingerprint as a WebAssembly reactor
// (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared), so that a host that is
// not Go computes request fingerprints byte for byte as Go does. It is a
// module of its own, beside the core's wasm/idem.wasm, which does not grow
// for it. Its exports and their byte layout (package wasm/internal/fpabi)
// are specified in wasm/ABI.md, "The fingerprint module". `make wasm` builds
// it into wasm/fingerprint.wasm.
package main

import (
	"unsafe"

	"github.com/idemkit/idem/fingerprint"
	"github.com/idemkit/idem/wasm/internal/fpabi"
)

// main is not run: a reactor is initialised with _initialize and then
// called through its exports.
func main() {}

// input is the buffer the host writes a call's bytes into, and answer the
// one the module writes its answer into. Both are the module's and reused,
// so that a fingerprint allocates neither once they are large enough; Go's
// collector does not move objects, so their addresses stay valid while they
// are referenced from here.
var (
	input  []byte
	answer []byte
)

// specs holds the compiled specs by handle-1 (handle 0 is never given);
// free lists the handles of released ones, reused first.
var (
	specs []*fingerprint.Spec
	free  []uint32
)

// idemFPABIVersion is how a host learns the layout before calling anything
// else.
//
//go:wasmexport idem_fp_abi_version
func idemFPABIVersion() uint32 { return fpabi.Version }

// idemFPInput returns the address of the input buffer, grown to at least
// size bytes. The address stays valid until the next idem_fp_input call.
//
//go:wasmexport idem_fp_input
func idemFPInput(size uint32) uint32 {
	if uint32(cap(input)) < size {
		input = make([]byte, size)
	}
	input = input[:cap(input)]
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input))))
}

// idemFPSpec compiles the spec request in the first size bytes of the input
// buffer with fingerprint.NewSpec; it answers the new spec's handle.
//
//go:wasmexport idem_fp_spec
func idemFPSpec(size uint32) uint64 { return reply(spec(answer[:0], size)) }

// idemFPOf answers the fingerprint of the body in the first size bytes of
// the input buffer under the spec of handle: Spec.Of.
//
//go:wasmexport idem_fp_of
func idemFPOf(handle, size uint32) uint64 { return reply(of(answer[:0], handle, size)) }

// idemFPCanonical answers the canonical form of the first size bytes of
// the input buffer, with the default limits: fingerprint.Canonicalize.
//
//go:wasmexport idem_fp_canonical
func idemFPCanonical(size uint32) uint64 {
	if uint64(size) > uint64(len(input)) {
		return reply(fpabi.AppendError(answer[:0], fpabi.MalformedSize))
	}
	return reply(fpabi.AppendCanonical(answer[:0], input[:size]))
}

// idemFPRelease drops the spec of handle, whose number a later idem_fp_spec
// may give again. It returns 1, or 0 if no spec had that handle.
//
//go:wasmexport idem_fp_release
func idemFPRelease(handle uint32) uint32 {
	if lookup(handle) == nil {
		return 0
	}
	specs[handle-1] = nil
	free = append(free, handle)
	return 1
}

// reply keeps a as the answer and returns (address << 32) | length, valid
// until the next call that answers.
func reply(a []byte) uint64 {
	answer = a
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(answer))))<<32 | uint64(len(answer))
}

func spec(dst []byte, size uint32) []byte {
	if uint64(size) > uint64(len(input)) {
		return fpabi.AppendError(dst, fpabi.MalformedSize)
	}
	req, err := fpabi.DecodeSpec(input[:size])
	if err != nil {
		return fpabi.AppendError(dst, err)
	}
	sp, err := fingerprint.NewSpec(req.UseCase, req.SchemaVersion, req.Options()...)
	if err != nil {
		return fpabi.AppendError(dst, err)
	}
	var h uint32
	if n := len(free); n > 0 {
		h, free = free[n-1], free[:n-1]
		specs[h-1] = sp
	} else {
		specs = append(specs, sp)
		h = uint32(len(specs))
	}
	return fpabi.AppendHandle(dst, h)
}

func of(dst []byte, handle, size uint32) []byte {
	sp := lookup(handle)
	switch {
	case sp == nil:
		return fpabi.AppendError(dst, fpabi.MalformedHandle)
	case uint64(size) > uint64(len(input)):
		return fpabi.AppendError(dst, fpabi.MalformedSize)
	}
	fp, err := sp.Of(input[:size])
	if err != nil {
		return fpabi.AppendError(dst, err)
	}
	return fpabi.AppendDigest(dst, (*[32]byte)(&fp))
}

// lookup is the live spec of handle, or nil.
func lookup(handle uint32) *fingerprint.Spec {
	if handle == 0 || uint64(handle) > uint64(len(specs)) {
		return nil
	}
	return specs[handle-1]
}
