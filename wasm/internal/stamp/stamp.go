// Package stamp records what each wasm module of the repository was built
// from (wasm/idem.wasm, the core; wasm/fingerprint.wasm, package
// fingerprint), so that a test can tell when a checked-in module is stale:
// `make wasm` writes the stamps (wasm/internal/stampcmd), and
// wasm/module_test.go recomputes them.
package stamp

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/build"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// modulePath is the Go module's import path.
const modulePath = "github.com/idemkit/idem"

// Module is a wasm module that `make wasm` builds and stamps. Its paths are
// slash paths under the repository root.
type Module struct {
	Wasm  string // the module
	Stamp string // its stamp
	Guest string // the import path of the package it is built from
}

var (
	// Idem is the core and the executor's protocol (wasm/guest).
	Idem = Module{Wasm: "wasm/idem.wasm", Stamp: "wasm/idem.wasm.stamp", Guest: modulePath + "/wasm/guest"}
	// Fingerprint is package fingerprint (wasm/fpguest).
	Fingerprint = Module{Wasm: "wasm/fingerprint.wasm", Stamp: "wasm/fingerprint.wasm.stamp", Guest: modulePath + "/wasm/fpguest"}
	// Modules are the modules `make wasm` builds.
	Modules = []Module{Idem, Fingerprint}
)

// Sources lists, as slash paths under root, the files whose change
// changes the module: go.mod (its go line selects the language version)
// and the Go files, as built for wasip1, of the guest and of every package
// of this module it imports (for idem.wasm the core, the ABI, the protocol,
// the store's contract; for fingerprint.wasm package fingerprint, the core
// and the fingerprint layout; and whatever they come to import). Tests are
// left out: they are not compiled into the module.
func (m Module) Sources(root string) ([]string, error) {
	ctx := build.Default
	ctx.GOOS, ctx.GOARCH = "wasip1", "wasm"
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	paths := []string{"go.mod"}
	seen := map[string]bool{}
	var walk func(importPath string) error
	walk = func(importPath string) error {
		if seen[importPath] {
			return nil
		}
		seen[importPath] = true
		dir := filepath.Join(abs, filepath.FromSlash(strings.TrimPrefix(importPath, modulePath)))
		pkg, err := ctx.ImportDir(dir, 0)
		if err != nil {
			return fmt.Errorf("stamp: %s: %w", importPath, err)
		}
		for _, f := range pkg.GoFiles {
			rel, err := filepath.Rel(abs, filepath.Join(dir, f))
			if err != nil {
				return err
			}
			paths = append(paths, filepath.ToSlash(rel))
		}
		for _, imp := range pkg.Imports {
			if imp == modulePath || strings.HasPrefix(imp, modulePath+"/") {
				if err := walk(imp); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(m.Guest); err != nil {
		return nil, err
	}
	slices.Sort(paths)
	return paths, nil
}

// Stamp is what the module was built from and what it is.
type Stamp struct {
	Sources string // SHA-256 over the source files' names and contents
	Module  string // SHA-256 of the module's bytes
}

// SourcesHash hashes the sources under root: each file's slash path, a NUL,
// its length and its bytes, in sorted path order, so that a rename, a new
// file or an edit all change it.
func (m Module) SourcesHash(root string) (string, error) {
	paths, err := m.Sources(root)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, rel := range paths {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ModuleHash hashes a module's bytes.
func ModuleHash(wasm []byte) string {
	s := sha256.Sum256(wasm)
	return hex.EncodeToString(s[:])
}

// Write writes s, m's stamp, in the stamp's text form.
func (m Module) Write(w io.Writer, s Stamp) error {
	_, err := fmt.Fprintf(w, "# written by `make wasm`: what %s was built from; checked by wasm/module_test.go\nsources %s\nmodule %s\n", m.Wasm, s.Sources, s.Module)
	return err
}

// Make computes m's stamp from the sources and the module under root, and
// writes it to m's stamp file.
func (m Module) Make(root string) error {
	sources, err := m.SourcesHash(root)
	if err != nil {
		return err
	}
	wasm, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.Wasm)))
	if err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(root, filepath.FromSlash(m.Stamp)))
	if err != nil {
		return err
	}
	if err := m.Write(f, Stamp{Sources: sources, Module: ModuleHash(wasm)}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Read parses the stamp's text form.
func Read(r io.Reader) (Stamp, error) {
	var s Stamp
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, " ")
		switch {
		case ok && k == "sources":
			s.Sources = v
		case ok && k == "module":
			s.Module = v
		default:
			return s, fmt.Errorf("stamp: unexpected line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if s.Sources == "" || s.Module == "" {
		return s, fmt.Errorf("stamp: want a sources and a module line")
	}
	return s, nil
}
