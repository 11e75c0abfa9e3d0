package idem_test

import (
	"go/ast"
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

// The protocol's files (the Flow and the Lease) and its host's (Do and its
// heart): the host may use only what the protocol exports, as raft's node
// uses RawNode only through Ready and Advance. What Do does is then what
// any host of the Flow does, the simulator included.
var (
	protocolFiles = []string{"flow.go", "lease.go"}
	hostFiles     = []string{"executor.go", "heartbeat.go"}
)

// TestDoIsAFlowHost: no identifier in the host's files refers to anything
// unexported that the protocol's files declare (a field, a method, a
// function, a constant or a type of the Flow's or the Lease's).
func TestDoIsAFlowHost(t *testing.T) {
	uses := protocolUses(t, ".", hostFiles)
	if len(uses) == 0 {
		t.Fatal("the host's files use nothing of the protocol's: the test reads the wrong files")
	}
	var past []string
	for name, exported := range uses {
		if !exported {
			past = append(past, name)
		}
	}
	sort.Strings(past)
	if len(past) > 0 {
		t.Fatalf("Do reaches past the Flow's public calls: %s", strings.Join(past, ", "))
	}
}

// TestDoIsAFlowHostCatchesAReachPast: the check fires on a host that reads
// the Flow's private state, as Do once did (f.state), and calls a private
// helper of the protocol's (replayed).
func TestDoIsAFlowHostCatchesAReachPast(t *testing.T) {
	dir := t.TempDir()
	for _, f := range append(protocolFilesAndRest(t), "executor.go") {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if f == "executor.go" {
			planted := strings.Replace(string(src), "\t\tcase EffectAnswer:\n",
				"\t\tcase EffectAnswer:\n\t\t\tif f.state == flowDone && f.result.Kind == ResultReplayed {\n\t\t\t\treplayed(&s.applied, &f.result)\n\t\t\t}\n", 1)
			if planted == string(src) {
				t.Fatal("the planted reach did not apply: executor.go changed")
			}
			src = []byte(planted)
		}
		if err := os.WriteFile(filepath.Join(dir, f), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	uses := protocolUses(t, dir, hostFiles)
	for _, want := range []string{"state", "flowDone", "result", "replayed"} {
		if exported, ok := uses[want]; !ok || exported {
			t.Errorf("the planted use of %s is not reported (used: %v, exported: %v)", want, ok, exported)
		}
	}
}

// protocolFilesAndRest is every non-test Go file of the package but
// executor.go: what a copy of the package needs besides its host.
func protocolFilesAndRest(t *testing.T) []string {
	t.Helper()
	all, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") && f != "executor.go" {
			out = append(out, f)
		}
	}
	return out
}

// protocolUses type-checks the package in dir and returns, for every
// object declared in the protocol's files that an identifier in files
// refers to, whether it is exported.
func protocolUses(t *testing.T, dir string, files []string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var asts []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		asts = append(asts, f)
	}
	if len(asts) == 0 {
		t.Fatalf("no Go file in %s", dir)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	if _, err := conf.Check("github.com/idemkit/idem", fset, asts, info); err != nil {
		t.Fatalf("type-check: %v", err)
	}
	in := func(pos token.Pos, names []string) bool {
		base := filepath.Base(fset.Position(pos).Filename)
		for _, n := range names {
			if base == n {
				return true
			}
		}
		return false
	}
	uses := map[string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() == nil || obj.Pkg().Path() != "github.com/idemkit/idem" || !in(id.Pos(), files) || !in(obj.Pos(), protocolFiles) {
			continue
		}
		uses[obj.Name()] = obj.Exported()
	}
	return uses
}
