package idem_test

import (
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The executor's protocol (the Flow and its Lease) is package flow, and Do
// (executor.go, heartbeat.go) is in this one: Do uses the Flow only through
// what flow exports, as raft's node uses RawNode only through Ready and
// Advance, and the compiler holds it to that. What Do does is then what any
// host of the Flow does, the simulator and the wasm module's included.

// ioPackages are the standard library's packages that do a host's I/O or
// make a binary large: the protocol must not import them, even through
// another package, so that it stays a state machine any runtime can carry.
var ioPackages = []string{"net", "net/http", "crypto/tls", "log", "log/slog", "os/exec", "os/signal", "database/sql", "runtime/debug"}

// TestFlowImportsNoIO: package flow imports, directly or not, only the
// standard library without ioPackages, and of this module only the core
// and the store's contract.
func TestFlowImportsNoIO(t *testing.T) {
	deps := importsOf(t, "github.com/idemkit/idem/flow")
	var bad []string
	for path, std := range deps {
		switch {
		case std && contains(ioPackages, path):
			bad = append(bad, path)
		case !std && !contains([]string{"github.com/idemkit/idem/core", "github.com/idemkit/idem/store"}, path):
			bad = append(bad, path)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("package flow imports %s", strings.Join(bad, ", "))
	}
	if _, ok := deps["github.com/idemkit/idem/core"]; !ok {
		t.Fatal("package flow does not import the core: importsOf reads the wrong package")
	}
}

// TestFlowImportsCatchesIO: the check sees an I/O package a dependency
// imports (this package imports net/http through nothing but itself).
func TestFlowImportsCatchesIO(t *testing.T) {
	deps := importsOf(t, "github.com/idemkit/idem/idemhttp")
	if std, ok := deps["net/http"]; !ok || !std {
		t.Fatalf("idemhttp's imports as read: net/http %v (standard: %v)", ok, std)
	}
}

// importsOf is every package path imports, directly or not, with whether
// it is in the standard library.
func importsOf(t *testing.T, path string) map[string]bool {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(p, srcDir string)
	walk = func(p, srcDir string) {
		pkg, err := build.Default.Import(p, srcDir, 0)
		if err != nil {
			t.Fatalf("import %s: %v", p, err)
		}
		for _, imp := range pkg.Imports {
			if _, ok := seen[imp]; ok || imp == "C" || imp == "unsafe" {
				continue
			}
			seen[imp] = pkg.Goroot || !strings.Contains(strings.Split(imp, "/")[0], ".")
			walk(imp, pkg.Dir) // the standard library's vendored packages resolve from its own directory
		}
	}
	walk(path, wd)
	return seen
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestDoCannotReachPastTheFlow: a Do that reads the Flow's private state,
// as Do once did (f.state), does not compile: the boundary is a package's.
func TestDoCannotReachPastTheFlow(t *testing.T) {
	src, err := os.ReadFile("executor.go")
	if err != nil {
		t.Fatal(err)
	}
	planted := strings.Replace(string(src), "\t\tcase EffectAnswer:\n",
		"\t\tcase EffectAnswer:\n\t\t\tif f.state == 4 {\n\t\t\t\treturn Result{}, nil\n\t\t\t}\n", 1)
	if planted == string(src) {
		t.Fatal("the planted reach did not apply: executor.go changed")
	}
	if err := typeCheckRoot(t, "executor.go", planted); err == nil || !strings.Contains(err.Error(), "unexported field state") {
		t.Fatalf("type-check of the planted Do: %v, want a refusal of the unexported field", err)
	}
	if err := typeCheckRoot(t, "executor.go", string(src)); err != nil {
		t.Fatalf("type-check of the package as it is: %v", err)
	}
}

// typeCheckRoot type-checks this package's non-test files with name's
// source replaced by src.
func typeCheckRoot(t *testing.T, name, src string) error {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var asts []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		var text any
		if f == name {
			text = src
		}
		parsed, err := parser.ParseFile(fset, f, text, 0)
		if err != nil {
			t.Fatal(err)
		}
		asts = append(asts, parsed)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	_, err = conf.Check("github.com/idemkit/idem", fset, asts, nil)
	return err
}
