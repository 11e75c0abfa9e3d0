// Package fpabi is the byte layout of the fingerprint module
// (wasm/fpguest, built into wasm/fingerprint.wasm): package fingerprint
// compiled to wasip1 on its own, so that a host that is not Go (Node.js:
// wasm/js/fingerprint.mjs) computes fingerprints byte-identical to Go's.
// wasm/ABI.md, "The fingerprint module", is its specification; a change here
// that is not also made there and in fingerprint.mjs is a bug, so any change
// of the layout bumps Version.
//
// All integers are little-endian and fixed width; strings are a u32 byte
// length, then the bytes.
package fpabi

import (
	"encoding/binary"
	"errors"

	"github.com/idemkit/idem/fingerprint"
)

// Version is the layout's version: the module exports it as
// idem_fp_abi_version, and a host refuses a module whose version differs.
const Version = 1

// Export names of the fingerprint module.
const (
	ExportVersion   = "idem_fp_abi_version" // () -> i32: Version
	ExportInput     = "idem_fp_input"       // (size i32) -> i32: address of the input buffer, grown to at least size bytes
	ExportSpec      = "idem_fp_spec"        // (size i32) -> i64: compiles the spec request in the input buffer; answer: a handle
	ExportOf        = "idem_fp_of"          // (handle i32, size i32) -> i64: Spec.Of over the input; answer: the digest
	ExportCanonical = "idem_fp_canonical"   // (size i32) -> i64: Canonicalize over the input; answer: the canonical bytes
	ExportRelease   = "idem_fp_release"     // (handle i32) -> i32: 1 if the handle was live and is now released, else 0
	ExportMemory    = "memory"
)

// Exports lists the functions a host requires, with memory.
var Exports = []string{ExportVersion, ExportInput, ExportSpec, ExportOf, ExportCanonical, ExportRelease, ExportMemory}

// Answer status, the first byte of an answer.
const (
	AnswerOK        = 0 // the export's result follows
	AnswerError     = 1 // a *fingerprint.Error follows
	AnswerMalformed = 2 // the module could not read the call (a host bug): a message follows
)

// Flags of a spec request.
const (
	FlagRequireIncluded       = 1 << 0 // fingerprint.RequireIncluded()
	FlagAllowImpreciseNumbers = 1 << 1 // fingerprint.AllowImpreciseNumbers()
	flagsAll                  = FlagRequireIncluded | FlagAllowImpreciseNumbers
)

// NoInclude is the include count of a spec without Include, which differs
// from Include given no pointer (count 0: NewSpec refuses it).
const NoInclude = 0xFFFF_FFFF

// Kinds are the error kinds of package fingerprint by index, and KindNames
// their names. The order is part of the layout (append only).
var (
	Kinds = []error{
		fingerprint.ErrSyntax, fingerprint.ErrInvalidUTF8, fingerprint.ErrSurrogate, fingerprint.ErrDuplicateName,
		fingerprint.ErrNumber, fingerprint.ErrNumberOverflow, fingerprint.ErrPrecision, fingerprint.ErrTooDeep,
		fingerprint.ErrTooLarge, fingerprint.ErrTrailingData, fingerprint.ErrBOM, fingerprint.ErrPointer,
	}
	KindNames = []string{
		"ErrSyntax", "ErrInvalidUTF8", "ErrSurrogate", "ErrDuplicateName",
		"ErrNumber", "ErrNumberOverflow", "ErrPrecision", "ErrTooDeep",
		"ErrTooLarge", "ErrTrailingData", "ErrBOM", "ErrPointer",
	}
)

// KindUnidentified is the kind index of an error that is not a
// *fingerprint.Error of a listed kind (the package returns none), named "".
const KindUnidentified = 255

// ErrMalformedRequest: the module could not read a call (a length past the
// input, an unknown handle, an unknown flag, bytes after a request).
var ErrMalformedRequest = errors.New("idem/fingerprint.wasm: malformed request")

// ErrMalformedAnswer: the host could not decode the module's answer.
var ErrMalformedAnswer = errors.New("idem/fingerprint.wasm: malformed answer")

// SpecRequest is what idem_fp_spec compiles: NewSpec's arguments.
type SpecRequest struct {
	UseCase               string
	SchemaVersion         uint32
	RequireIncluded       bool
	AllowImpreciseNumbers bool
	BytesMax, DepthMax    int64    // fingerprint.Canonicalizer's, 0 the defaults
	Include               []string // nil: no Include; empty, not nil: Include()
	Exclude               []string
}

// AppendSpec appends the encoding of r:
//
//	str use_case  u32 schema_version  u8 flags  i64 bytes_max  i64 depth_max
//	u32 include_count (NoInclude: no Include), then a str per pointer
//	u32 exclude_count, then a str per pointer
func AppendSpec(dst []byte, r *SpecRequest) []byte {
	dst = appendStr(dst, r.UseCase)
	dst = binary.LittleEndian.AppendUint32(dst, r.SchemaVersion)
	var flags byte
	if r.RequireIncluded {
		flags |= FlagRequireIncluded
	}
	if r.AllowImpreciseNumbers {
		flags |= FlagAllowImpreciseNumbers
	}
	dst = append(dst, flags)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.BytesMax))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.DepthMax))
	if r.Include == nil {
		dst = binary.LittleEndian.AppendUint32(dst, NoInclude)
	} else {
		dst = appendStrs(dst, r.Include)
	}
	return appendStrs(dst, r.Exclude)
}

// DecodeSpec reads a spec request. Its strings are copies: the Spec keeps
// them, and the module reuses its input buffer.
func DecodeSpec(b []byte) (SpecRequest, error) {
	rd := reader{b: b}
	var r SpecRequest
	r.UseCase = rd.str()
	r.SchemaVersion = rd.u32()
	flags := rd.u8()
	r.RequireIncluded = flags&FlagRequireIncluded != 0
	r.AllowImpreciseNumbers = flags&FlagAllowImpreciseNumbers != 0
	r.BytesMax, r.DepthMax = int64(rd.u64()), int64(rd.u64())
	if n := rd.u32(); n != NoInclude {
		r.Include = rd.strs(n)
	}
	r.Exclude = rd.strs(rd.u32())
	switch {
	case rd.bad:
		return r, malformed("spec request truncated or a length past its end")
	case flags&^flagsAll != 0:
		return r, malformed("unknown spec flags")
	case rd.off != len(b):
		return r, malformed("bytes after the spec request")
	}
	return r, nil
}

// Options are r's options for fingerprint.NewSpec.
func (r *SpecRequest) Options() []fingerprint.Option {
	var opts []fingerprint.Option
	if r.Include != nil {
		opts = append(opts, fingerprint.Include(r.Include...))
	}
	if len(r.Exclude) > 0 {
		opts = append(opts, fingerprint.Exclude(r.Exclude...))
	}
	if r.RequireIncluded {
		opts = append(opts, fingerprint.RequireIncluded())
	}
	if r.AllowImpreciseNumbers {
		opts = append(opts, fingerprint.AllowImpreciseNumbers())
	}
	return append(opts, fingerprint.WithLimits(fingerprint.Canonicalizer{BytesMax: int(r.BytesMax), DepthMax: int(r.DepthMax)}))
}

// malformed is an ErrMalformedRequest saying what.
func malformed(what string) error { return &MalformedError{Message: what} }

// MalformedError is an AnswerMalformed answer: the module could not read
// the call. It unwraps to ErrMalformedRequest.
type MalformedError struct{ Message string }

func (e *MalformedError) Error() string { return ErrMalformedRequest.Error() + ": " + e.Message }
func (e *MalformedError) Unwrap() error { return ErrMalformedRequest }

// MalformedHandle is the malformed request of an unknown handle.
var MalformedHandle = malformed("unknown spec handle")

// MalformedSize is the malformed request of a size beyond the input buffer.
var MalformedSize = malformed("size beyond the input buffer")

func appendStr(dst []byte, s string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

func appendStrs(dst []byte, ss []string) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(ss)))
	for _, s := range ss {
		dst = appendStr(dst, s)
	}
	return dst
}

// reader decodes little-endian fields; after the first short read every
// read fails and returns a zero value, and bad is set.
type reader struct {
	b   []byte
	off int
	bad bool
}

func (r *reader) take(n uint64) []byte {
	if r.bad || n > uint64(len(r.b)-r.off) {
		r.bad = true
		return nil
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

func (r *reader) u8() uint8 {
	if s := r.take(1); s != nil {
		return s[0]
	}
	return 0
}

func (r *reader) u32() uint32 {
	if s := r.take(4); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if s := r.take(8); s != nil {
		return binary.LittleEndian.Uint64(s)
	}
	return 0
}

func (r *reader) str() string { return string(r.take(uint64(r.u32()))) }

// strs reads n strings. n is checked against the bytes left (a string takes
// at least its 4-byte length) before anything is allocated for them.
func (r *reader) strs(n uint32) []string {
	if uint64(n)*4 > uint64(len(r.b)-r.off) {
		r.bad = true
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.str()
	}
	return ss
}
