package idem_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// Issue 22 §1: a file holds one concern and a function fits a screen.
const (
	fileLinesMax     = 600
	functionLinesMax = 70
)

// tooLong lists what in one Go source is over the limits: the file, and
// each function over functionLinesMax lines (from func to its closing
// brace) whose doc comment gives no reason in a line starting "Long:".
func tooLong(path string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	if n := fset.File(f.Pos()).LineCount(); n > fileLinesMax {
		out = append(out, fmt.Sprintf("%s: %d lines", path, n))
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
		if n > functionLinesMax && (fd.Doc == nil || !strings.Contains(fd.Doc.Text(), "\nLong: ") && !strings.HasPrefix(fd.Doc.Text(), "Long: ")) {
			out = append(out, fmt.Sprintf("%s: func %s: %d lines", path, fd.Name.Name, n))
		}
	}
	return out, nil
}

// TestFilesAndFunctionsFitAScreen: no non-test Go file of the module is
// over 600 lines, and no function over 70 without a one-line reason.
func TestFilesAndFunctionsFitAScreen(t *testing.T) {
	files := 0
	for _, path := range repoFiles(t, ".") {
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files++
		bad, err := tooLong(path, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bad {
			t.Error(b)
		}
	}
	if files < 100 {
		t.Fatalf("only %d Go files read: the walk is broken", files)
	}
}

// TestTooLongCatchesAPlantedFunction: the check sees a function one line
// over the limit, and passes it with a reason.
func TestTooLongCatchesAPlantedFunction(t *testing.T) {
	body := strings.Repeat("\t_ = 0\n", functionLinesMax-2)
	for doc, want := range map[string]int{
		"":                                   1,
		"// f does it.\n":                    1,
		"// f does it.\n// Long: a table.\n": 0,
	} {
		src := "package p\n\n" + doc + "func f() {\n" + body + "\t_ = 1\n}\n"
		bad, err := tooLong("p.go", []byte(src))
		if err != nil || len(bad) != want {
			t.Errorf("doc %q: %v, %v; want %d findings", doc, bad, err, want)
		}
	}
	short := "package p\n\nfunc f() {\n" + body + "}\n" // exactly the limit
	if bad, _ := tooLong("p.go", []byte(short)); len(bad) != 0 {
		t.Errorf("a function of exactly %d lines: %v", functionLinesMax, bad)
	}
	if bad, _ := tooLong("p.go", []byte("package p\n"+strings.Repeat("\n", fileLinesMax))); len(bad) != 1 {
		t.Errorf("a file of %d lines: %v", fileLinesMax+1, bad)
	}
}
