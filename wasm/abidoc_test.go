package wasmcore

import (
	"encoding/binary"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/bits"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/wasm/internal/abi"
	"github.com/idemkit/idem/wasm/internal/fpabi"
)

// TestABIDocument holds ABI.md to package abi where a number or a name of
// the layout is written in both: the version, the exports, the sentinel indexes,
// the change bits, the tags, the nil length and the answer statuses. Its
// last section, the fingerprint module's, is TestABIDocumentFingerprint's.
func TestABIDocument(t *testing.T) {
	doc, _ := abiDocument(t)
	must := saying(t, "ABI.md", doc)
	must("the version in its title", fmt.Sprintf("# idem.wasm ABI, version %d\n", abi.Version))
	must("the version idem_abi_version returns", fmt.Sprintf("| `%s` | `() -> i32` | this document's version: `%d` |", abi.ExportVersion, abi.Version))
	for _, name := range []string{abi.ExportInput, abi.ExportStep, abi.ExportFlow, abi.ExportMemory} {
		must("an export", fmt.Sprintf("| `%s` |", name))
	}
	if n := len(exportRows.FindAllString(doc, -1)); n != 6 {
		t.Errorf("ABI.md's export table has %d rows, want 6 (_initialize and the five of package abi)", n)
	}
	for call, name := range map[int]string{abi.FlowBegin: "begin", abi.FlowApplied: "applied", abi.FlowRan: "ran", abi.FlowWaited: "waited",
		abi.FlowGone: "gone", abi.FlowLease: "lease", abi.FlowBeaten: "beaten", abi.FlowLost: "lost", abi.FlowBeatTimeout: "beat_timeout", abi.FlowEnd: "end"} {
		must("a flow call", fmt.Sprintf("| %d | `%s` |", call, name))
	}
	if m := regexp.MustCompile(`version (\d+)|version is (\d+)|v(\d+)\b`).FindAllStringSubmatch(doc, -1); len(m) == 0 {
		t.Error("no version found in ABI.md: is the pattern broken?")
	} else {
		for _, g := range m {
			if v := g[1] + g[2] + g[3]; v != fmt.Sprint(abi.Version) {
				t.Errorf("ABI.md names version %s: %q", v, g[0])
			}
		}
	}

	// The error table: a row holds two indexes, each `| index | `sentinel` |`.
	codes := map[string]string{}
	for _, m := range regexp.MustCompile("\\| (\\d+) \\| `(Err\\w+)` ").FindAllStringSubmatch(doc, -1) {
		codes[m[1]] = m[2]
	}
	for i, name := range sentinelNames {
		if codes[fmt.Sprint(i)] != name {
			t.Errorf("ABI.md's sentinel index %d is %q, abi.Sentinels[%d] is %s", i, codes[fmt.Sprint(i)], i, name)
		}
	}
	if len(codes) != len(sentinelNames) {
		t.Errorf("ABI.md lists %d sentinel indexes, abi.Sentinels has %d", len(codes), len(sentinelNames))
	}
	must("the malformed-request index", fmt.Sprintf("| | | %d | the guest could not decode the request", abi.SentinelMalformedRequest))
	must("the unidentified index", fmt.Sprintf("| | | %d | an error wrapping none of these |", abi.SentinelUnidentified))

	// The change bits, in the order of abi's Changed constants.
	bits := changedNames(t)
	m := regexp.MustCompile(`(?s)u32 changed\s+(.*?)\nthen the value`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("ABI.md has no change-mask list")
	}
	listed := regexp.MustCompile(`(?:bit |,\s+)(\d+) ([a-z_]+)`).FindAllStringSubmatch(m[1], -1)
	if len(listed) != len(bits) {
		t.Fatalf("ABI.md lists %d change bits, abi has %d: %v", len(listed), len(bits), bits)
	}
	for i, l := range listed {
		if l[1] != fmt.Sprint(i) || l[2] != bits[i] {
			t.Errorf("ABI.md's change bit %s is %s, abi's bit %d is %s", l[1], l[2], i, bits[i])
		}
	}

	must("the nil length", fmt.Sprintf("length `0x%X` is a nil slice", nilLength()))
	must("the nil header count", fmt.Sprintf("`0x%X` for nil; then per header", nilLength()))
	must("the answer statuses", fmt.Sprintf("First byte: `%d` (OK) or `%d` (refused).", abi.AnswerOK, abi.AnswerRefused))
	must("the zero time's tag", fmt.Sprintf("`%d` = the zero time", abi.TimeZero))
	must("an instant's tag", fmt.Sprintf("`%d` = an instant: `i64` Unix seconds, `u32` nanoseconds (< 10^9)", abi.TimeInstant))
	must("the from-now tag", fmt.Sprintf("tag may also be `%d`: an instant derived from the event's `now`", abi.TimeFromNow))
	must("the response tags", fmt.Sprintf("A changed response is `u8`: `%d` cleared (`Response{}`), `%d`\nthe event's response", abi.ResponseCleared, abi.ResponseFromEvent))
	must("the explicit response tag", fmt.Sprintf("`%d` a `response` follows", abi.ResponseExplicit))
	must("the highest change bit", fmt.Sprintf("a change bit above %d", len(bits)-1))
}

// exportRows are the rows of an export table.
var exportRows = regexp.MustCompile("(?m)^\\| `[a-z_]+` \\|")

// fingerprintSection opens ABI.md's last section, the fingerprint module's.
const fingerprintSection = "\n## The fingerprint module\n"

// abiDocument is ABI.md: the core's part, and the fingerprint module's
// section (with its heading).
func abiDocument(t *testing.T) (core, fp string) {
	t.Helper()
	src, err := os.ReadFile("ABI.md")
	if err != nil {
		t.Fatal(err)
	}
	core, fp, ok := strings.Cut(string(src), fingerprintSection)
	if !ok {
		t.Fatalf("ABI.md has no section %q", strings.TrimSpace(fingerprintSection))
	}
	return core, fingerprintSection + fp
}

// saying returns a check that doc (named name) says text, which says what.
func saying(t *testing.T, name, doc string) func(what, text string) {
	return func(what, text string) {
		t.Helper()
		if !strings.Contains(doc, text) {
			t.Errorf("%s does not say %s: %q", name, what, text)
		}
	}
}

// TestABIDocumentFingerprint holds ABI.md's fingerprint section to package
// fpabi: the version, the exports, the statuses, the flags, the no-Include
// count and the kind table.
func TestABIDocumentFingerprint(t *testing.T) {
	_, doc := abiDocument(t)
	must := saying(t, "ABI.md's fingerprint section", doc)
	must("the version", fmt.Sprintf("| `%s` | `() -> i32` | the layout's version: `%d` |", fpabi.ExportVersion, fpabi.Version))
	for _, name := range fpabi.Exports {
		must("an export", fmt.Sprintf("| `%s` |", name))
	}
	if n := len(exportRows.FindAllString(doc, -1)); n != len(fpabi.Exports)+1 {
		t.Errorf("the fingerprint section's export table has %d rows, want %d (_initialize and fpabi.Exports)", n, len(fpabi.Exports)+1)
	}
	must("the statuses", fmt.Sprintf("First byte: `%d` (OK), `%d` (error), `%d` (malformed request).", fpabi.AnswerOK, fpabi.AnswerError, fpabi.AnswerMalformed))
	must("the flags", fmt.Sprintf("bit %d require_included (`RequireIncluded()`), bit %d\n  allow_imprecise_numbers",
		bits.TrailingZeros(fpabi.FlagRequireIncluded), bits.TrailingZeros(fpabi.FlagAllowImpreciseNumbers)))
	must("the no-Include count", fmt.Sprintf("`include_count` `0x%X`: no Include.", fpabi.NoInclude))
	must("the unidentified kind", fmt.Sprintf("| | | %d | an error of none of these kinds", fpabi.KindUnidentified))
	kinds := map[string]string{}
	for _, m := range regexp.MustCompile("\\| (\\d+) \\| `(Err\\w+)` ").FindAllStringSubmatch(doc, -1) {
		kinds[m[1]] = m[2]
	}
	for i, name := range fpabi.KindNames {
		if kinds[fmt.Sprint(i)] != name {
			t.Errorf("ABI.md's kind %d is %q, fpabi.KindNames[%d] is %s", i, kinds[fmt.Sprint(i)], i, name)
		}
	}
	if len(kinds) != len(fpabi.KindNames) || len(fpabi.Kinds) != len(fpabi.KindNames) {
		t.Errorf("ABI.md lists %d kinds, fpabi.KindNames %d, fpabi.Kinds %d", len(kinds), len(fpabi.KindNames), len(fpabi.Kinds))
	}

	// Each kind is named as package fingerprint names it, and every kind
	// the package declares is listed.
	declared := fingerprintKinds(t)
	for i, k := range fpabi.Kinds {
		if declared[k.Error()] != fpabi.KindNames[i] {
			t.Errorf("fpabi.Kinds[%d] (%q) is fingerprint.%s, not %s", i, k, declared[k.Error()], fpabi.KindNames[i])
		}
	}
	if len(declared) != len(fpabi.Kinds) {
		t.Errorf("package fingerprint declares %d kinds (%v), fpabi lists %d", len(declared), declared, len(fpabi.Kinds))
	}
}

// fingerprintKinds maps the text of each Err* variable of
// fingerprint/errors.go (`ErrSyntax = errors.New("invalid JSON")`) to its name.
func fingerprintKinds(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../fingerprint/errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || len(spec.Values) != 1 || !strings.HasPrefix(spec.Names[0].Name, "Err") {
			return true
		}
		if call, ok := spec.Values[0].(*ast.CallExpr); ok && len(call.Args) == 1 {
			if lit, ok := call.Args[0].(*ast.BasicLit); ok {
				text, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				kinds[text] = spec.Names[0].Name
			}
		}
		return false
	})
	return kinds
}

// nilLength is abi's length of a nil slice (unexported there), as the
// request of a record with nil headers shows it: the header count before
// the body's length (fakeEchoOffset).
func nilLength() uint32 {
	req := abi.AppendRequest(nil, &core.Record{}, &core.Event{}, &core.Policy{})
	return binary.LittleEndian.Uint32(req[fakeEchoOffset-4:])
}

// changedNames are abi's Changed constants in order, in ABI.md's words:
// ChangedLastErrorCode is last_error_code.
func changedNames(t *testing.T) []string {
	f := abiSource(t)
	var names []string
	snake := regexp.MustCompile(`([a-z])([A-Z])`)
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || !strings.HasPrefix(spec.Names[0].Name, "Changed") {
			return true
		}
		name := strings.TrimPrefix(spec.Names[0].Name, "Changed")
		names = append(names, strings.ToLower(snake.ReplaceAllString(name, "${1}_${2}")))
		return false
	})
	return names
}

// abiSource is package abi's abi.go, parsed.
func abiSource(t *testing.T) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "internal/abi/abi.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
