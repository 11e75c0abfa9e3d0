//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package abi

import "unsafe"

// load32 and load64 read a little-endian integer at p, which the caller has
// bounds-checked: one load on a little-endian machine, which every wasm
// machine is. (The byte-by-byte form is combined into one load by the
// compiler too, but its inlining cost keeps the reader's methods from being
// inlined, and a call is what is dear under Go's wasm backend.)
func load32(p unsafe.Pointer) uint32 { return *(*uint32)(p) }
func load64(p unsafe.Pointer) uint64 { return *(*uint64)(p) }
