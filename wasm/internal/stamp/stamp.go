// Package stamp records what wasm/idem.wasm was built from, so that a test
// can tell when the embedded module is stale: `make wasm` writes the stamp
// (wasm/internal/stampcmd), and wasm/module_test.go recomputes it.
package stamp

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// File is the stamp's path under the repository root.
const File = "wasm/idem.wasm.stamp"

// sourceGlobs are the files whose change changes the module: the core, the
// guest, the ABI package and go.mod (its go line selects the language
// version). Tests are left out: they are not compiled into the module.
var sourceGlobs = []string{"core/*.go", "wasm/guest/*.go", "wasm/internal/abi/*.go", "go.mod"}

// Stamp is what the module was built from and what it is.
type Stamp struct {
	Sources string // SHA-256 over the source files' names and contents
	Module  string // SHA-256 of the module's bytes
}

// SourcesHash hashes the sources under root: each file's slash path, a NUL,
// its length and its bytes, in sorted path order, so that a rename, a new
// file or an edit all change it.
func SourcesHash(root string) (string, error) {
	var paths []string
	for _, g := range sourceGlobs {
		m, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(g)))
		if err != nil {
			return "", err
		}
		for _, p := range m {
			if !strings.HasSuffix(p, "_test.go") {
				paths = append(paths, p)
			}
		}
	}
	slices.Sort(paths)
	h := sha256.New()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
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
