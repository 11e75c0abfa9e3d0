package fingerprint

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/idemkit/idem/core"
)

func mustSpec(t testing.TB, useCase string, version uint32, opts ...Option) *Spec {
	t.Helper()
	sp, err := NewSpec(useCase, version, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func mustOf(t testing.TB, sp *Spec, body string) core.Fingerprint {
	t.Helper()
	fp, err := sp.Of([]byte(body))
	if err != nil {
		t.Fatalf("Of(%s): %v", body, err)
	}
	return fp
}

// The pre-image layout is part of the contract: changing it changes every
// stored fingerprint, and retries in flight across a deploy would get 422.
func TestPreimageLayout(t *testing.T) {
	be64 := func(n int) string {
		return string(binary.BigEndian.AppendUint64(nil, uint64(n)))
	}
	header := be64(len(DomainTag)) + DomainTag + be64(15) + "payments.create" + "\x00\x00\x00\x07"

	canon := `{"amount":1250,"currency":"EUR"}`
	doc := header + "D" + be64(len(canon)) + canon
	fp, err := Of("payments.create", 7, []byte(`{ "currency": "EUR", "amount": 1250 }`))
	if err != nil {
		t.Fatal(err)
	}
	if fp != core.Fingerprint(sha256.Sum256([]byte(doc))) {
		t.Fatal("document pre-image differs from the documented layout")
	}
	// A fixed vector: this must never change for DomainTag v1.
	if got, want := fp.String(), goldenDocument; got != want {
		t.Fatalf("golden fingerprint %s, want %s", got, want)
	}

	inc := header + "I" + be64(3) +
		be64(7) + "/amount" + "\x01" + be64(4) + "1250" +
		be64(5) + "/memo" + "\x00" +
		be64(9) + "/customer" + "\x01" + be64(4) + "null"
	fp, err = Of("payments.create", 7, []byte(`{"currency":"EUR","amount":1250,"customer":null}`),
		Include("/amount", "/memo", "/customer"))
	if err != nil {
		t.Fatal(err)
	}
	if fp != core.Fingerprint(sha256.Sum256([]byte(inc))) {
		t.Fatal("include-list pre-image differs from the documented layout")
	}
}

const goldenDocument = "160fd00797bdf6a920886388d1a65a34c7256024bd68ca1c7cf94d4fc82aa24b"

func TestSeparation(t *testing.T) {
	// Fields that a plain join would run together stay apart.
	seen := map[core.Fingerprint]string{}
	for _, c := range []struct {
		useCase string
		version uint32
		body    string
	}{
		{"ab", 1, `"c"`},
		{"a", 1, `"bc"`},
		{"a", 1, `"b"`},
		{"a|1", 1, `"b"`},
		{"a", 11, `"b"`},
		{"a", 1, `["b"]`},
		{"", 1, `"ab"`},
		{"a\x00\x00\x00\x01D", 1, `1`},
		{"a", 1, `1`},
		{"a", 0, `1`},
		{"a", 1 << 31, `1`},
	} {
		fp, err := Of(c.useCase, c.version, []byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		key := c.useCase + "/" + string(rune(c.version)) + "/" + c.body
		if prev, ok := seen[fp]; ok {
			t.Fatalf("%q and %q share a fingerprint", prev, key)
		}
		seen[fp] = key
	}
	// The same request in another layout is the same fingerprint.
	a := mustOf(t, mustSpec(t, "u", 1), `{"b":[1,2.50,{"y":"\u00e9","x":null}],"a":true}`)
	b := mustOf(t, mustSpec(t, "u", 1), "{\n  \"a\": true,\n  \"b\": [1, 2.5, {\"x\": null, \"y\": \"\u00e9\"}]\n}")
	if a != b {
		t.Fatal("layout changed the fingerprint")
	}
}

func TestExclude(t *testing.T) {
	sp := mustSpec(t, "payments.create", 1, Exclude("/client_ts", "/meta/trace_id", "/items/0", "/a~1b", "/t~0"))
	base := mustOf(t, sp, `{"amount":100,"meta":{}}`)
	for _, same := range []string{
		`{"amount":100,"meta":{},"client_ts":"2024-01-01T00:00:00Z"}`,
		`{"client_ts":12345678901234567890,"meta":{"trace_id":"abc"},"amount":100}`,
		`{"amount":100,"meta":{"trace_id":{"deep":[1,2,3]}},"a/b":1,"t~":2}`,
	} {
		if mustOf(t, sp, same) != base {
			t.Errorf("excluded field changed the fingerprint: %s", same)
		}
	}
	for _, diff := range []string{
		`{"amount":101,"meta":{}}`,
		`{"amount":100}`, // meta absent differs from meta present with only excluded content
		`{"amount":100,"meta":{"other":1}}`,
		`{"amount":100,"meta":{},"a~1b":1}`,
		`{"amount":100,"meta":{},"ab":1}`,
	} {
		if mustOf(t, sp, diff) == base {
			t.Errorf("a selected change kept the fingerprint: %s", diff)
		}
	}
	// An excluded array element is removed from its array.
	x := mustOf(t, sp, `{"amount":100,"meta":{},"items":["a","b"]}`)
	if mustOf(t, sp, `{"amount":100,"meta":{},"items":["zzz","b"]}`) != x {
		t.Error("excluded array element changed the fingerprint")
	}
	if mustOf(t, sp, `{"amount":100,"meta":{},"items":["a","c"]}`) == x {
		t.Error("a change to a kept array element kept the fingerprint")
	}
	// The whole body stays strict: an excluded member is still checked.
	for _, bad := range []string{
		`{"amount":100,"client_ts":1,"client_ts":2}`,
		`{"amount":100,"client_ts":"\ud800"}`,
		`{"amount":100,"client_ts":1e400}`,
		`{"amount":100,"client_ts":01}`,
	} {
		if _, err := sp.Of([]byte(bad)); err == nil {
			t.Errorf("Of(%s) accepted a body that is not I-JSON", bad)
		}
	}
}

func TestInclude(t *testing.T) {
	sp := mustSpec(t, "payments.create", 1, Include("/amount", "/currency", "/items/1/sku"), Exclude("/items/1/note"))
	base := mustOf(t, sp, `{"amount":100,"currency":"EUR","items":[{},{"sku":"X"}]}`)
	for _, same := range []string{
		`{"currency":"EUR","amount":1e2,"ts":5,"items":[{"sku":"other"},{"note":"n","sku":"X"}]}`,
		`{"amount":100.0,"currency":"\u0045UR","items":[7,{"sku":"X"}],"extra":[1,2,{"z":99999999999999999999}]}`,
	} {
		if mustOf(t, sp, same) != base {
			t.Errorf("a field outside the selection changed the fingerprint: %s", same)
		}
	}
	absent := mustOf(t, sp, `{"amount":100,"items":[{},{"sku":"X"}]}`)
	null := mustOf(t, sp, `{"amount":100,"currency":null,"items":[{},{"sku":"X"}]}`)
	empty := mustOf(t, sp, `{"amount":100,"currency":"","items":[{},{"sku":"X"}]}`)
	if absent == null || absent == empty || null == empty || absent == base {
		t.Error("absent, null, empty and present values must all differ")
	}
	// Absent through a scalar, a short array or a missing parent: all the
	// same "absent".
	a1 := mustOf(t, sp, `{"amount":100,"currency":"EUR","items":"none"}`)
	a2 := mustOf(t, sp, `{"amount":100,"currency":"EUR","items":[{}]}`)
	a3 := mustOf(t, sp, `{"amount":100,"currency":"EUR"}`)
	a4 := mustOf(t, sp, `{"amount":100,"currency":"EUR","items":{"1":{}}}`)
	if a1 != a2 || a2 != a3 || a3 != a4 {
		t.Error("absent values encode differently")
	}
	// A pointer token also matches an object member named like an index.
	if mustOf(t, sp, `{"amount":100,"currency":"EUR","items":{"1":{"sku":"X"}}}`) != base {
		t.Error(`"/items/1" did not select member "1" of an object`)
	}
	// The order and names of the pointers are part of the encoding.
	ab := mustOf(t, mustSpec(t, "u", 1, Include("/a", "/b")), `{"a":1,"b":2}`)
	ba := mustOf(t, mustSpec(t, "u", 1, Include("/b", "/a")), `{"a":2,"b":1}`)
	if ab == ba {
		t.Error("swapped pointers and swapped values gave one fingerprint")
	}
	// The root pointer includes the whole document.
	root := mustSpec(t, "u", 1, Include(""))
	if mustOf(t, root, `{"a":1}`) == mustOf(t, root, `{"a":2}`) {
		t.Error(`Include("") ignored the body`)
	}
	// RequireIncluded turns absence into an error.
	req := mustSpec(t, "u", 1, Include("/a"), RequireIncluded())
	if _, err := req.Of([]byte(`{"b":1}`)); !errors.Is(err, ErrPointer) {
		t.Errorf("RequireIncluded: %v, want ErrPointer", err)
	}
	if _, err := req.Of([]byte(`{"a":null}`)); err != nil {
		t.Errorf("RequireIncluded with null: %v", err)
	}
	// The body outside the selection is still strict I-JSON.
	if _, err := sp.Of([]byte(`{"amount":1,"x":{"y":1,"y":2}}`)); !errors.Is(err, ErrDuplicateName) {
		t.Errorf("duplicate outside the selection: %v", err)
	}
	if _, err := sp.Of([]byte(`{"amount":1,"x":"\udc00"}`)); !errors.Is(err, ErrSurrogate) {
		t.Errorf("surrogate outside the selection: %v", err)
	}
}

func TestPrecision(t *testing.T) {
	strict := mustSpec(t, "u", 1)
	loose := mustSpec(t, "u", 1, AllowImpreciseNumbers())
	for _, ok := range []string{
		`9007199254740991`, `-9007199254740991`, `9007199254740991.0`, `9.007199254740991e15`,
		`900719925474099.1`, `1e15`, `1000000000000000`, `12.34`, `0.1`, `0.30000000000000004`,
		`1.7976931348623157e-300`, `5e-324`, `1e-310`, `-2.225073858507201e-308`, `-0`, `0.000`, `123456789.12345678`, `4.35`,
		`[1,{"a":[2,3.5]}]`,
	} {
		if _, err := strict.Of([]byte(ok)); err != nil {
			t.Errorf("Of(%s): %v", ok, err)
		}
	}
	for _, bad := range []string{
		// Integers beyond ±(2^53-1), however written.
		`9007199254740992`, `9007199254740993`, `-9007199254740992`, `18446744073709551615`,
		`9007199254740993.0`, `9.007199254740993e15`, `9007199254740992e0`, `9007199254740991.5`,
		`1e16`, `1e30`, `-1.5e300`, `1.7976931348623157e308`, `[1,{"a":[2,1e100]}]`,
		// More significant digits than a double keeps.
		`0.10000000000000000001`, `0.3000000000000000444`, `333333333.33333329`,
		`9007199254740990.6`, `1.00000000000000001`,
		// A non-zero literal that underflows to 0, or to a subnormal that
		// keeps fewer digits than the literal has.
		`1e-400`, `-2e-324`, `4e-324`, `1.23456789012345e-315`,
	} {
		_, err := strict.Of([]byte(bad))
		if !errors.Is(err, ErrPrecision) {
			t.Errorf("Of(%s) = %v, want ErrPrecision", bad, err)
		}
		if _, err := loose.Of([]byte(bad)); err != nil {
			t.Errorf("Of(%s) with AllowImpreciseNumbers: %v", bad, err)
		}
	}
	// Why: with RFC rounding two different amounts share a fingerprint.
	if mustOf(t, loose, `{"amount":9007199254740993}`) != mustOf(t, loose, `{"amount":9007199254740992}`) {
		t.Error("expected RFC rounding to merge ...992 and ...993")
	}
	// The rule applies to what counts: an excluded or unselected big
	// integer (a 64-bit trace id) is fine.
	ex := mustSpec(t, "u", 1, Exclude("/trace"))
	if _, err := ex.Of([]byte(`{"amount":1,"trace":18446744073709551615}`)); err != nil {
		t.Errorf("excluded big integer: %v", err)
	}
	in := mustSpec(t, "u", 1, Include("/amount"))
	if _, err := in.Of([]byte(`{"amount":1,"trace":18446744073709551615}`)); err != nil {
		t.Errorf("unselected big integer: %v", err)
	}
	if _, err := in.Of([]byte(`{"amount":18446744073709551615}`)); !errors.Is(err, ErrPrecision) {
		t.Errorf("selected big integer: %v, want ErrPrecision", err)
	}
	// Canonicalize itself stays RFC-exact, also right after a strict Of
	// (which shares pooled scratch with it).
	mustOf(t, strict, `[1]`)
	if got, err := Canonicalize([]byte(`9007199254740993`)); err != nil || string(got) != "9007199254740992" {
		t.Errorf("Canonicalize(9007199254740993) = %s, %v", got, err)
	}
}

func TestSpecErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"no leading slash", []Option{Include("a")}},
		{"bad tilde", []Option{Include("/a~2")}},
		{"trailing tilde", []Option{Exclude("/a~")}},
		{"invalid UTF-8", []Option{Include("/\xff")}},
		{"empty include", []Option{Include()}},
		{"duplicate include", []Option{Include("/a", "/b", "/a")}},
		{"duplicate exclude", []Option{Exclude("/a", "/a")}},
		{"exclude root", []Option{Exclude("")}},
		{"exclude the included", []Option{Include("/a"), Exclude("/a")}},
		{"exclude a parent of the included", []Option{Include("/a/b/c"), Exclude("/a")}},
		{"exclude root of include", []Option{Include(""), Exclude("")}},
	} {
		_, err := NewSpec("u", 1, c.opts...)
		var e *Error
		if !errors.As(err, &e) || e.Kind != ErrPointer || e.Offset != -1 {
			t.Errorf("%s: %v, want ErrPointer without offset", c.name, err)
			continue
		}
		if strings.Contains(err.Error(), "offset") {
			t.Errorf("%s: message %q names an offset", c.name, err)
		}
	}
	// Allowed: nested excludes, an exclude beside or below an include.
	if _, err := NewSpec("u", 1, Include("/a", "/b"), Exclude("/a/x", "/c", "/c/d", "/~01")); err != nil {
		t.Errorf("valid spec: %v", err)
	}
	// Limits are honoured by Of.
	sp := mustSpec(t, "u", 1, WithLimits(Canonicalizer{BytesMax: 10, DepthMax: 2}))
	if _, err := sp.Of([]byte(`[[[1]]]`)); !errors.Is(err, ErrTooDeep) {
		t.Errorf("depth: %v", err)
	}
	if _, err := sp.Of([]byte(`[1,2,3,4,5]`)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("size: %v", err)
	}
}

func TestParsePointer(t *testing.T) {
	for p, want := range map[string][]string{
		"":          nil,
		"/":         {""},
		"/a/b":      {"a", "b"},
		"/a~1b":     {"a/b"},
		"/m~0n":     {"m~n"},
		"/~01":      {"~1"},
		"/~10":      {"/0"},
		"//":        {"", ""},
		"/ ":        {" "},
		"/c%d":      {"c%d"},
		"/\u00e9/0": {"\u00e9", "0"},
	} {
		got, err := parsePointer(p)
		if err != nil || strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Errorf("parsePointer(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
	for tok, want := range map[string]int{"0": 0, "1": 1, "10": 10, "01": -1, "-": -1, "": -1, "1a": -1, "-1": -1, "99999999999": -1} {
		if got := arrayIndex(tok); got != want {
			t.Errorf("arrayIndex(%q) = %d, want %d", tok, got, want)
		}
	}
}

// A Spec is shared by concurrent requests; pooled scratch must not leak
// between them (run with -race).
func TestConcurrentOf(t *testing.T) {
	specs := []*Spec{
		mustSpec(t, "u", 1),
		mustSpec(t, "u", 1, Exclude("/b")),
		mustSpec(t, "u", 1, Include("/a", "/c/0")),
	}
	bodies := []string{`{"a":1,"b":2,"c":[3]}`, `{"c":[{"z":1,"y":2}],"a":"x"}`, `[9007199254740993]`, `{"a":{"q":[1,2,{"r":null}]}}`}
	want := map[[2]int]string{}
	for i, sp := range specs {
		for j, body := range bodies {
			fp, err := sp.Of([]byte(body))
			want[[2]int{i, j}] = fp.String() + errString(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for n := range 200 {
				i, j := (g+n)%len(specs), (g*7+n)%len(bodies)
				fp, err := specs[i].Of([]byte(bodies[j]))
				if got := fp.String() + errString(err); got != want[[2]int{i, j}] {
					t.Errorf("spec %d body %d: %s, want %s", i, j, got, want[[2]int{i, j}])
					return
				}
				if _, err := Canonicalize([]byte(bodies[j])); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return " " + err.Error()
}
