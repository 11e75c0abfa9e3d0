package idem_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// goNames is what the module declares, by name: each package's exported
// identifiers, and each type's fields and methods (in any package).
type goNames struct {
	packages map[string]map[string]bool // package name → its exported identifiers
	members  map[string]map[string]bool // type name → its fields and methods
}

// loadGoNames parses every package of the module under root (tests left
// out).
func loadGoNames(t *testing.T, root string) *goNames {
	n := &goNames{packages: map[string]map[string]bool{}, members: map[string]map[string]bool{}}
	for _, path := range repoFiles(t, root) {
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		n.add(f)
	}
	return n
}

// repoFiles lists the repository's files under root, leaving out what is
// not its own source or docs: node_modules, testdata, the tools module and
// hidden directories.
func repoFiles(t *testing.T, root string) []string {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != root && (d.Name() == "node_modules" || d.Name() == "testdata" || d.Name() == "tools" || strings.HasPrefix(d.Name(), ".")):
			return filepath.SkipDir
		case !d.IsDir():
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// set is m[k], made when absent.
func set(m map[string]map[string]bool, k string) map[string]bool {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	return m[k]
}

// add records what f declares.
func (n *goNames) add(f *ast.File) {
	pkg := set(n.packages, f.Name.Name)
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv == nil {
				pkg[decl.Name.Name] = true
			} else {
				set(n.members, receiverName(decl.Recv.List[0].Type))[decl.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					pkg[spec.Name.Name] = true
					addMembers(set(n.members, spec.Name.Name), spec.Type)
				case *ast.ValueSpec:
					for _, id := range spec.Names {
						pkg[id.Name] = true
					}
				}
			}
		}
	}
}

func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// addMembers adds a struct's fields or an interface's methods, embedded
// ones by their type's name.
func addMembers(m map[string]bool, e ast.Expr) {
	var fields *ast.FieldList
	switch x := e.(type) {
	case *ast.StructType:
		fields = x.Fields
	case *ast.InterfaceType:
		fields = x.Methods
	default:
		return
	}
	for _, f := range fields.List {
		for _, id := range f.Names {
			m[id.Name] = true
		}
		if len(f.Names) == 0 {
			if sel, ok := f.Type.(*ast.SelectorExpr); ok {
				m[sel.Sel.Name] = true
			} else {
				m[receiverName(f.Type)] = true
			}
		}
	}
}

// qualified is a Go name as docs write it: pkg.Name, Type.Member, or
// pkg.Type.Member.
var qualified = regexp.MustCompile(`\b([A-Za-z][A-Za-z0-9_]*)\.([A-Z][A-Za-z0-9_]*)(?:\.([A-Z][A-Za-z0-9_]*))?`)

// stale lists the names in text that name something of the module that
// does not exist: pkg.Name where pkg is one of the module's packages, and
// Type.Member where Type is one of its types. Names of other packages
// (http.Handler) and prose are left alone.
func (n *goNames) stale(text string) []string {
	var out []string
	for _, m := range qualified.FindAllStringSubmatch(text, -1) {
		x, y, z := m[1], m[2], m[3]
		switch {
		case n.packages[x] != nil:
			if !n.packages[x][y] {
				out = append(out, x+"."+y)
			} else if z != "" && n.members[y] != nil && !n.members[y][z] && !n.embedsMember(y, z) {
				out = append(out, m[0])
			}
		case len(n.members[x]) > 0 && n.isType(x):
			if !n.members[x][y] && !n.embedsMember(x, y) {
				out = append(out, x+"."+y)
			}
		}
	}
	return out
}

func (n *goNames) isType(name string) bool {
	for _, p := range n.packages {
		if p[name] {
			return true
		}
	}
	return false
}

// embedsMember reports whether a type that typ embeds (one level) has
// member.
func (n *goNames) embedsMember(typ, member string) bool {
	for embedded := range n.members[typ] {
		if n.members[embedded][member] {
			return true
		}
	}
	return false
}

// otherLanguages are Markdown's code blocks in a language other than Go
// (the Node host's EventKind.Reserve is JavaScript).
var otherLanguages = regexp.MustCompile("(?ms)^```(?:js|javascript|ts|typescript|sh|console|sql|json)\n.*?^```")

// docTexts are the texts the names test reads: every Markdown file of the
// repository, and every package comment, by path.
func docTexts(t *testing.T, root string) map[string]string {
	out := map[string]string{}
	for _, path := range repoFiles(t, root) {
		switch {
		case strings.HasSuffix(path, ".md"):
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			out[path] = otherLanguages.ReplaceAllString(string(src), "")
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if f.Doc != nil {
				out[path] = f.Doc.Text()
			}
		}
	}
	return out
}

// TestDocsNameOnlyExistingIdentifiers: every pkg.Name and Type.Member in
// the repository's Markdown and package docs names something the module
// declares (issue 22 §4).
func TestDocsNameOnlyExistingIdentifiers(t *testing.T) {
	names := loadGoNames(t, ".")
	texts := docTexts(t, ".")
	if len(texts) < 20 || len(names.packages["idem"]) < 20 || len(names.members["Executor"]) < 5 {
		t.Fatalf("read %d texts, %d names of idem, %d members of Executor: the reader is broken",
			len(texts), len(names.packages["idem"]), len(names.members["Executor"]))
	}
	paths := make([]string, 0, len(texts))
	for p := range texts {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if bad := names.stale(texts[p]); len(bad) > 0 {
			t.Errorf("%s names what does not exist: %s", p, strings.Join(bad, ", "))
		}
	}
}

// TestDocsNamesCatchAStaleName: the check above sees a planted stale name
// of each kind, and passes names of other packages and real ones.
func TestDocsNamesCatchAStaleName(t *testing.T) {
	names := loadGoNames(t, ".")
	for text, want := range map[string]string{
		"calls `idem.ApplyInto` first":           "idem.ApplyInto",
		"then `Executor.Call` runs it":           "Executor.Call",
		"see store.Op.Result for the answer":     "store.Op.Result",
		"`core.Step`, `Flow.Next`, http.Handler": "",
		"memstore.Options.Shards, idem.Request":  "",
	} {
		got := strings.Join(names.stale(text), ", ")
		if got != want {
			t.Errorf("stale(%q) = %q, want %q", text, got, want)
		}
	}
}
