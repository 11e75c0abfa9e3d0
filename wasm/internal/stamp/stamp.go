// Package stamp records what wasm/idem.wasm was built from, so that a test
// can tell when the embedded module is stale: `make wasm` writes the stamp
// (wasm/internal/stampcmd), and wasm/module_test.go recomputes it.
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

// File is the stamp's path under the repository root.
const File = "wasm/idem.wasm.stamp"

// modulePath is the module's import path; guestPath the guest's package.
const (
	modulePath = "github.com/idemkit/idem"
	guestPath  = modulePath + "/wasm/guest"
)

// Sources lists, as slash paths under root, the files whose change
// changes the module: go.mod (its go line selects the language version)
// and the Go files, as built for wasip1, of the guest and of every package
// of this module it imports (the core, the ABI, the protocol, the store's
// contract, and whatever they come to import). Tests are left out: they
// are not compiled into the module.
func Sources(root string) ([]string, error) {
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
	if err := walk(guestPath); err != nil {
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
func SourcesHash(root string) (string, error) {
	paths, err := Sources(root)
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

// Write writes s in the stamp's text form.
func Write(w io.Writer, s Stamp) error {
	_, err := fmt.Fprintf(w, "# written by `make wasm`: what wasm/idem.wasm was built from; checked by wasm/module_test.go\nsources %s\nmodule %s\n", s.Sources, s.Module)
	return err
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
