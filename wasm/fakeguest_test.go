package wasmcore

import (
	"bytes"
	"testing"

	"github.com/idemkit/idem/wasm/internal/abi"
)

// The fake guest is a small hand-assembled module that speaks the ABI's
// calls (ABI.md, "Imports and exports") without a core behind them, so that
// the hosts' own duties can be tested against a guest that does exactly
// what a test asks: trap, exit, grow its memory during a step, answer bytes
// the test chose, answer outside its memory. Both hosts are tested against
// it: this package, and host.test.mjs, which reads the same module from
// js/testdata/fake.wasm (written by TestFakeGuestFresh -update-fixture).
//
// A request's first field, the policy's lease (u64), is the command:
//
//	fakeCanned  answer OK with a fixed result that reports the guest's state:
//	            decision kind 1, decision token = idem_step calls of this
//	            instance, retry after = its idem_input calls, write kind 0,
//	            expect version = the address idem_input last returned,
//	            expect token = the size idem_step was given, no changes
//	fakeTrap    execute `unreachable`
//	fakeExit    call WASI proc_exit(3)
//	fakeGrow    grow the memory by a page during idem_step and answer as
//	            fakeCanned from the new page
//	fakeEcho    answer the bytes of the record's response body; the request
//	            must have an empty scope and nil headers, so that the body
//	            is at offset fakeEchoOffset
//	fakeOutside answer 64 bytes at 0xFFFFFF00, outside the memory
//	fakeAtEnd   answer as fakeCanned from the last fakeCannedSize bytes of
//	            the memory: an answer that ends exactly at its end
//	fakePastEnd write the same answer there, and point one byte after it:
//	            an answer whose last byte is one past the end of the memory
//
// Any other command traps. For a request of fakeBadInputSize bytes,
// idem_input returns an address outside the memory; for one byte more it
// traps. So do a step before idem_abi_version was called
// and a step of more bytes than idem_input last provided; idem_abi_version
// answers 0 unless _initialize ran first. idem_input always returns a new
// buffer (a bump allocator that grows the memory as needed), which the ABI
// allows: a host that writes where an earlier call pointed writes outside
// the buffer it holds, and the guest reads its command elsewhere.
const (
	fakeCanned  = 1
	fakeTrap    = 2
	fakeExit    = 3
	fakeGrow    = 4
	fakeEcho    = 5
	fakeOutside = 6
	fakeAtEnd   = 7
	fakePastEnd = 8

	// fakeEchoOffset: the policy (87 bytes), four empty strings, status,
	// fingerprint, token, version, then the response: status code, schema
	// version, the nil header count, and the body's length.
	fakeEchoOffset = 87 + 4*4 + 1 + 32 + 8 + 8 + 8 + 4 + 4

	// fakeBadInputSize: idem_input returns 0xFFFFFF00, outside the memory,
	// for a request of exactly this many bytes, and traps for one more.
	fakeBadInputSize = 4099
	fakeCannedSize   = 1 + 1 + 8 + 8 + 1 + 8 + 8 + 4
)

const fakeGuestPath = "js/testdata/fake.wasm"

// fakeOutsidePacked is fakeOutside's answer: 64 bytes at 0xFFFFFF00, as
// the i64 idem_step returns.
var fakeOutsidePacked uint64 = 0xFFFFFF00<<32 | 64

// wasm binary encoding helpers.
func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func sleb(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func wasmVec(items ...[]byte) []byte {
	out := uleb(uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func wasmSection(id byte, body []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(body)))...), body...)
}

func wasmName(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// Instructions.
const (
	opUnreachable = 0x00
	opIf          = 0x04
	opEnd         = 0x0b
	opBr          = 0x0c
	opBrIf        = 0x0d
	opReturn      = 0x0f
	opCall        = 0x10
	opLocalGet    = 0x20
	opLocalSet    = 0x21
	opGlobalGet   = 0x23
	opGlobalSet   = 0x24
	opI32Load     = 0x28
	opI64Load     = 0x29
	opI32Store    = 0x36
	opI64Store    = 0x37
	opI32Store8   = 0x3a
	opMemorySize  = 0x3f
	opMemoryGrow  = 0x40
	opI32Const    = 0x41
	opI64Const    = 0x42
	opI32Eqz      = 0x45
	opI32Eq       = 0x46
	opI32GtU      = 0x4b
	opI32LeU      = 0x4d
	opI32Add      = 0x6a
	opI32Sub      = 0x6b
	opI32And      = 0x71
	opI32Shl      = 0x74
	opI64Or       = 0x84
	opI64Shl      = 0x86
	opI32WrapI64  = 0xa7
	opI64ExtendU  = 0xad
	blockVoid     = 0x40
	blockI32      = 0x7f
	opBlock       = 0x02
	opLoop        = 0x03
	opElse        = 0x05
	typeI32       = 0x7f
	typeI64       = 0x7e
)

func i32c(v int32) []byte            { return append([]byte{opI32Const}, sleb(int64(v))...) }
func i64c(v int64) []byte            { return append([]byte{opI64Const}, sleb(v)...) }
func lget(i uint32) []byte           { return append([]byte{opLocalGet}, uleb(uint64(i))...) }
func lset(i uint32) []byte           { return append([]byte{opLocalSet}, uleb(uint64(i))...) }
func gget(i uint32) []byte           { return append([]byte{opGlobalGet}, uleb(uint64(i))...) }
func gset(i uint32) []byte           { return append([]byte{opGlobalSet}, uleb(uint64(i))...) }
func call(f uint32) []byte           { return append([]byte{opCall}, uleb(uint64(f))...) }
func mem(op byte, off uint32) []byte { return cat([]byte{op, 0}, uleb(uint64(off))) } // align 1: any address

// Globals of the fake guest (all mutable i32).
const (
	gInit = iota
	gVersioned
	gInputs
	gSteps
	gNext
	gLastInput
	gLastInputSize
	gCount
)

// Functions: the import, then the module's own.
const (
	fProcExit = iota
	fInitialize
	fVersion
	fInput
	fStep
	fCanned
)

// fakeGuest assembles the fake guest.
func fakeGuest() []byte {
	incr := func(g uint32) []byte { return cat(gget(g), i32c(1), []byte{opI32Add}, gset(g)) }
	trapIf := func(cond ...[]byte) []byte { return cat(cat(cond...), []byte{opIf, blockVoid, opUnreachable, opEnd}) }
	isCmd := func(c int32) []byte { return cat(lget(1), i32c(c), []byte{opI32Eq, opIf, blockVoid}) }
	packed := func(addr []byte, size []byte) []byte { // (addr << 32) | size, as i64
		return cat(addr, []byte{opI64ExtendU}, i64c(32), []byte{opI64Shl}, size, []byte{opI64ExtendU, opI64Or})
	}

	initialize := cat(i32c(1), gset(gInit), []byte{opEnd})
	version := cat(i32c(1), gset(gVersioned), gget(gInit),
		[]byte{opIf, blockI32}, i32c(int32(abi.Version)), []byte{opElse}, i32c(0), []byte{opEnd, opEnd})
	// input(size) -> addr; local 1: addr.
	input := cat(
		lget(0), i32c(fakeBadInputSize), []byte{opI32Eq, opIf, blockVoid}, i32c(-256), []byte{opReturn, opEnd}, // 0xFFFFFF00
		trapIf(lget(0), i32c(fakeBadInputSize+1), []byte{opI32Eq}),
		incr(gInputs),
		gget(gNext), lset(1),
		lget(1), lget(0), []byte{opI32Add}, i32c(7), []byte{opI32Add}, i32c(-8), []byte{opI32And}, gset(gNext),
		// Grow until the buffer fits.
		[]byte{opBlock, blockVoid, opLoop, blockVoid},
		gget(gNext), []byte{opMemorySize, 0}, i32c(16), []byte{opI32Shl, opI32LeU, opBrIf, 1},
		i32c(1), []byte{opMemoryGrow, 0}, i32c(-1), []byte{opI32Eq}, []byte{opIf, blockVoid, opUnreachable, opEnd},
		[]byte{opBr, 0, opEnd, opEnd},
		lget(1), gset(gLastInput),
		lget(0), gset(gLastInputSize),
		lget(1), []byte{opEnd},
	)
	// lastCanned sets local 2 to where the last fakeCannedSize bytes of the
	// memory start.
	lastCanned := cat([]byte{opMemorySize, 0}, i32c(16), []byte{opI32Shl}, i32c(fakeCannedSize), []byte{opI32Sub}, lset(2))
	// step(size) -> packed; local 1: the command, local 2: an address.
	step := cat(
		incr(gSteps),
		trapIf(gget(gVersioned), []byte{opI32Eqz}),
		trapIf(lget(0), gget(gLastInputSize), []byte{opI32GtU}),
		gget(gLastInput), mem(opI64Load, 0), []byte{opI32WrapI64}, lset(1),
		isCmd(fakeCanned), i32c(0), lget(0), call(fCanned), i64c(fakeCannedSize), []byte{opReturn, opEnd},
		isCmd(fakeTrap), []byte{opUnreachable, opEnd},
		isCmd(fakeExit), i32c(3), call(fProcExit), []byte{opUnreachable, opEnd},
		isCmd(fakeGrow),
		i32c(1), []byte{opMemoryGrow, 0}, i32c(16), []byte{opI32Shl}, lset(2),
		lget(2), lget(0), call(fCanned),
		packed(lget(2), i32c(fakeCannedSize)), []byte{opReturn, opEnd},
		isCmd(fakeEcho),
		packed(cat(gget(gLastInput), i32c(fakeEchoOffset+4), []byte{opI32Add}), cat(gget(gLastInput), mem(opI32Load, fakeEchoOffset))),
		[]byte{opReturn, opEnd},
		isCmd(fakeOutside), i64c(int64(fakeOutsidePacked)), []byte{opReturn, opEnd},
		isCmd(fakeAtEnd), lastCanned, lget(2), lget(0), call(fCanned),
		packed(lget(2), i32c(fakeCannedSize)), []byte{opReturn, opEnd},
		isCmd(fakePastEnd), lastCanned, lget(2), lget(0), call(fCanned),
		packed(cat(lget(2), i32c(1), []byte{opI32Add}), i32c(fakeCannedSize)), []byte{opReturn, opEnd},
		[]byte{opUnreachable, opEnd},
	)
	// canned(base, size): the fakeCanned answer at base.
	canned := cat(
		lget(0), i32c(abi.AnswerOK), mem(opI32Store8, 0),
		lget(0), i32c(1), mem(opI32Store8, 1),
		lget(0), gget(gSteps), []byte{opI64ExtendU}, mem(opI64Store, 2),
		lget(0), gget(gInputs), []byte{opI64ExtendU}, mem(opI64Store, 10),
		lget(0), i32c(0), mem(opI32Store8, 18),
		lget(0), gget(gLastInput), []byte{opI64ExtendU}, mem(opI64Store, 19),
		lget(0), lget(1), []byte{opI64ExtendU}, mem(opI64Store, 27),
		lget(0), i32c(0), mem(opI32Store, 35),
		[]byte{opEnd},
	)
	body := func(locals []byte, code []byte) []byte {
		b := cat(locals, code)
		return cat(uleb(uint64(len(b))), b)
	}
	noLocals := wasmVec()
	i32Locals := func(n uint64) []byte { return wasmVec(cat(uleb(n), []byte{typeI32})) }

	var globals [][]byte
	for g := 0; g < gCount; g++ {
		init := int32(0)
		if g == gNext {
			init = 1024 // below: the canned answer's bytes
		}
		globals = append(globals, cat([]byte{typeI32, 1}, i32c(init), []byte{opEnd}))
	}
	return cat(
		[]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00},
		wasmSection(1, wasmVec( // types
			[]byte{0x60, 1, typeI32, 0},          // 0: (i32) -> ()
			[]byte{0x60, 0, 0},                   // 1: () -> ()
			[]byte{0x60, 0, 1, typeI32},          // 2: () -> i32
			[]byte{0x60, 1, typeI32, 1, typeI32}, // 3: (i32) -> i32
			[]byte{0x60, 1, typeI32, 1, typeI64}, // 4: (i32) -> i64
			[]byte{0x60, 2, typeI32, typeI32, 0}, // 5: (i32, i32) -> ()
		)),
		wasmSection(2, wasmVec(cat(wasmName("wasi_snapshot_preview1"), wasmName("proc_exit"), []byte{0x00, 0}))),
		wasmSection(3, wasmVec([]byte{1}, []byte{2}, []byte{3}, []byte{4}, []byte{5})),
		wasmSection(5, wasmVec([]byte{0x00, 1})), // one memory, one page, no maximum
		wasmSection(6, wasmVec(globals...)),
		wasmSection(7, wasmVec(
			cat(wasmName("_initialize"), []byte{0x00, fInitialize}),
			cat(wasmName(abi.ExportVersion), []byte{0x00, fVersion}),
			cat(wasmName(abi.ExportInput), []byte{0x00, fInput}),
			cat(wasmName(abi.ExportStep), []byte{0x00, fStep}),
			cat(wasmName(abi.ExportFlow), []byte{0x00, fStep}), // the same duties: a call in the input, an answer in memory
			cat(wasmName(abi.ExportMemory), []byte{0x02, 0}),
		)),
		wasmSection(10, wasmVec(
			body(noLocals, initialize),
			body(noLocals, version),
			body(i32Locals(1), input),
			body(i32Locals(2), step),
			body(noLocals, canned),
		)),
	)
}

// renameExport returns wasm with the first occurrence of the export name
// old replaced by new, of the same length: a module that lacks old.
func renameExport(t *testing.T, wasm []byte, old, new string) []byte {
	t.Helper()
	if len(old) != len(new) {
		t.Fatalf("renameExport: %q and %q differ in length", old, new)
	}
	i := bytes.Index(wasm, append(uleb(uint64(len(old))), old...))
	if i < 0 {
		t.Fatalf("renameExport: no export %q", old)
	}
	out := bytes.Clone(wasm)
	copy(out[i+1:], new)
	return out
}

// TestFakeGuestFresh keeps js/testdata/fake.wasm the module fakeGuest
// assembles (rewrite it with -update-fixture).
func TestFakeGuestFresh(t *testing.T) {
	keepFixture(t, fakeGuestPath, "TestFakeGuestFresh", fakeGuest())
}
