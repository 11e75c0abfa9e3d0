package core

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyStandardLibrary fails if the core (without its tests) depends on
// any package outside the standard library.
func TestOnlyStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/idemkit/idem/core" {
			t.Errorf("core depends on non-standard package %s", p)
		}
	}
}

// TestNoClockRandomnessConcurrencyOrIO fails if core's non-test source reads
// a clock, draws random numbers, starts a goroutine, or imports a package
// that does I/O or synchronisation.
func TestNoClockRandomnessConcurrencyOrIO(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, problem := range impurities(t, name, src) {
			t.Error(problem)
		}
	}
	if checked < 5 {
		t.Fatalf("checked only %d files: the glob is wrong", checked)
	}
}

// TestPurityCheckCatchesPlantedImpurities shows the check above can fail.
func TestPurityCheckCatchesPlantedImpurities(t *testing.T) {
	planted := map[string]string{
		"clock":     "package core\nimport \"time\"\nfunc f() time.Time { return time.Now() }",
		"alias":     "package core\nimport tm \"time\"\nfunc f() { tm.Sleep(1) }",
		"rand":      "package core\nimport \"math/rand\"\nfunc f() int { return rand.Int() }",
		"crypto":    "package core\nimport \"crypto/rand\"\nvar _ = rand.Reader",
		"goroutine": "package core\nfunc f() { go func() {}() }",
		"os":        "package core\nimport \"os\"\nvar _ = os.Args",
		"net":       "package core\nimport \"net\"\nvar _ net.Conn",
		"sync":      "package core\nimport \"sync\"\nvar _ sync.Mutex",
	}
	for name, src := range planted {
		if len(impurities(t, name+".go", []byte(src))) == 0 {
			t.Errorf("planted impurity %q was not caught", name)
		}
	}
}

func impurities(t *testing.T, name string, src []byte) []string {
	t.Helper()
	forbiddenImports := map[string]bool{
		"math/rand": true, "math/rand/v2": true, "crypto/rand": true, "os": true, "net": true,
		"sync": true, "sync/atomic": true, "io": true, "io/fs": true, "syscall": true,
		"runtime": true, "unsafe": true, "log": true, "log/slog": true,
	}
	clockReads := map[string]bool{
		"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
		"AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true,
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	timeName := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if forbiddenImports[path] || strings.HasPrefix(path, "net/") || strings.HasPrefix(path, "os/") {
			problems = append(problems, fmt.Sprintf("%s imports %s", fset.Position(imp.Pos()), path))
		}
		if path == "time" {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			problems = append(problems, fmt.Sprintf("%s starts a goroutine", fset.Position(n.Pos())))
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && id.Name == timeName && clockReads[n.Sel.Name] {
				problems = append(problems, fmt.Sprintf("%s reads the clock: time.%s", fset.Position(n.Pos()), n.Sel.Name))
			}
		}
		return true
	})
	return problems
}
