//go:build wasip1 && abifloor

package main

import (
	"runtime"
	"runtime/debug"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/wasm/internal/abi"
)

// The floor exports, built only with -tags abifloor, for the measurements of
// BENCHMARKS.md, "wasm": each runs one part of a step n times inside the
// guest, on the request already in the input buffer, so that the host's
// benchmark divides one call's time by n and the crossing drops out. They
// are not part of the ABI.

var floorSink uint64

func floorDecode(size uint32) (rec core.Record, ev core.Event, p core.Policy) {
	if err := abi.DecodeRequest(input[:size], &rec, &ev, &p); err != nil {
		panic(err)
	}
	return
}

// idemFloorStep runs core.Step n times on the decoded request: the Go wasm
// runtime's cost for the core alone, no encoding at all.
//
//go:wasmexport idem_floor_step
func idemFloorStep(size, n uint32) uint32 {
	rec0, ev, p := floorDecode(size)
	for range n {
		rec := rec0
		res, err := core.Step(&rec, &ev, &p)
		if err != nil {
			panic(err)
		}
		floorSink += uint64(res.Decision.Kind)
	}
	return uint32(floorSink)
}

// idemFloorDecode decodes the request n times.
//
//go:wasmexport idem_floor_decode
func idemFloorDecode(size, n uint32) uint32 {
	for range n {
		rec, _, _ := floorDecode(size)
		floorSink += uint64(rec.Status)
	}
	return uint32(floorSink)
}

// idemFloorEncode steps once, then encodes the answer n times.
//
//go:wasmexport idem_floor_encode
func idemFloorEncode(size, n uint32) uint32 {
	rec, ev, p := floorDecode(size)
	before := rec
	res, err := core.Step(&rec, &ev, &p)
	if err != nil {
		panic(err)
	}
	for range n {
		answer = abi.AppendOK(answer[:0], &res, &before, &rec, &ev)
	}
	return uint32(len(answer))
}

// idemFloorWhole runs the whole of idem_step n times (decode, Step, encode),
// without leaving the guest.
//
//go:wasmexport idem_floor_whole
func idemFloorWhole(size, n uint32) uint32 {
	for range n {
		answer = stepImpl(answer[:0], size)
	}
	return uint32(len(answer))
}

// idemFloorMallocs returns the heap allocations of n whole steps.
//
//go:wasmexport idem_floor_mallocs
func idemFloorMallocs(size, n uint32) uint64 {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range n {
		answer = stepImpl(answer[:0], size)
	}
	runtime.ReadMemStats(&m1)
	return m1.Mallocs - m0.Mallocs
}

// idemFloorGCPercent sets the guest's GOGC, returning the previous value.
//
//go:wasmexport idem_floor_gc_percent
func idemFloorGCPercent(pct int32) int32 { return int32(debug.SetGCPercent(int(pct))) }
