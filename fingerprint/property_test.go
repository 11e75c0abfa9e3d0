package fingerprint

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/idemkit/idem/core"
	"pgregory.net/rapid"
)

// jv is a JSON value model, for generating inputs and for an independent
// notion of "the same value".
type jv struct {
	kind byte // 'n' null, 'b' bool, 'f' number, 's' string, 'a' array, 'o' object
	b    bool
	f    float64
	s    string
	arr  []*jv
	obj  []jmember // names unique
}

type jmember struct {
	name string
	v    *jv
}

var runeGen = rapid.OneOf(
	rapid.SampledFrom([]rune("abcxyzAB01 /\"\\~<>&'")),
	rapid.Int32Range(0, 0x1f),
	rapid.Int32Range(0x7f, 0x7ff),
	rapid.Int32Range(0x800, 0xd7ff),
	rapid.Int32Range(0xe000, 0xffff),
	rapid.Int32Range(0x10000, 0x10ffff),
	rapid.SampledFrom([]rune{0x2028, 0x2029, 0xfeff, 0xfffd, 0xfb33, 0x1f602, 0xe000, 0xffff, 0x10000}),
)

var stringGen = rapid.StringOfN(runeGen, 0, 8, -1)

var numberGen = rapid.OneOf(
	rapid.Map(rapid.IntRange(-1000, 1000), func(i int) float64 { return float64(i) }),
	rapid.Map(rapid.Int64Range(-safeIntegerMax, safeIntegerMax), func(i int64) float64 { return float64(i) }),
	rapid.Map(rapid.IntRange(-1e9, 1e9), func(i int) float64 { return float64(i) / 100 }),
	rapid.Map(rapid.Uint64(), func(u uint64) float64 {
		f := math.Float64frombits(u)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0.5
		}
		return f
	}),
	rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1e21, 1e-6, 1e-7, 9007199254740992, 5e-324, math.MaxFloat64, 0.1, 1e20}),
)

func genValue(t *rapid.T, depth int) *jv {
	kinds := "nbfsao"
	if depth <= 0 {
		kinds = "nbfs"
	}
	switch kinds[rapid.IntRange(0, len(kinds)-1).Draw(t, "kind")] {
	case 'n':
		return &jv{kind: 'n'}
	case 'b':
		return &jv{kind: 'b', b: rapid.Bool().Draw(t, "bool")}
	case 'f':
		return &jv{kind: 'f', f: numberGen.Draw(t, "number")}
	case 's':
		return &jv{kind: 's', s: stringGen.Draw(t, "string")}
	case 'a':
		n := rapid.IntRange(0, 4).Draw(t, "len")
		v := &jv{kind: 'a', arr: []*jv{}}
		for range n {
			v.arr = append(v.arr, genValue(t, depth-1))
		}
		return v
	}
	return genObject(t, depth)
}

func genObject(t *rapid.T, depth int) *jv {
	names := rapid.SliceOfNDistinct(rapid.OneOf(stringGen, rapid.SampledFrom([]string{"a", "b", "amount", "0", "1", "a/b", "m~n", ""})), 0, 5, rapid.ID[string]).Draw(t, "names")
	v := &jv{kind: 'o', obj: []jmember{}}
	for _, n := range names {
		v.obj = append(v.obj, jmember{n, genValue(t, depth-1)})
	}
	return v
}

// render writes v as JSON text, drawing member order, white space, string
// escapes and number notation, so that many texts have one value.
func render(t *rapid.T, v *jv) []byte {
	var b []byte
	ws := func() {
		b = append(b, rapid.SampledFrom([]string{"", "", " ", "\n", "\t", "\r\n  "}).Draw(t, "ws")...)
	}
	var rec func(v *jv)
	rec = func(v *jv) {
		ws()
		switch v.kind {
		case 'n':
			b = append(b, "null"...)
		case 'b':
			b = strconv.AppendBool(b, v.b)
		case 'f':
			b = append(b, renderNumber(t, v.f)...)
		case 's':
			b = renderString(t, b, v.s)
		case 'a':
			b = append(b, '[')
			for i, e := range v.arr {
				if i > 0 {
					b = append(b, ',')
				}
				rec(e)
			}
			ws()
			b = append(b, ']')
		case 'o':
			b = append(b, '{')
			for i, m := range rapid.Permutation(v.obj).Draw(t, "order") {
				if i > 0 {
					b = append(b, ',')
				}
				ws()
				b = renderString(t, b, m.name)
				ws()
				b = append(b, ':')
				rec(m.v)
			}
			ws()
			b = append(b, '}')
		}
		ws()
	}
	rec(v)
	return b
}

func renderNumber(t *rapid.T, f float64) string {
	forms := []string{
		strconv.FormatFloat(f, 'g', -1, 64),
		strconv.FormatFloat(f, 'e', -1, 64),
		strconv.FormatFloat(f, 'E', -1, 64),
		strconv.FormatFloat(f, 'e', 16, 64),               // 17 digits: the conversion path
		trailingZero(strconv.FormatFloat(f, 'e', -1, 64)), // 1.50e+00, 1.0e+00
	}
	if a := math.Abs(f); a == 0 || a > 1e-30 && a < 1e30 {
		forms = append(forms, strconv.FormatFloat(f, 'f', -1, 64))
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		forms = append(forms, strconv.FormatFloat(f, 'f', 1, 64)) // 12.0
	}
	s := rapid.SampledFrom(forms).Draw(t, "numform")
	return strings.Replace(s, "+", "", rapid.IntRange(0, 1).Draw(t, "plus")) // 1e+5 or 1e5
}

func trailingZero(e string) string {
	if strings.Contains(e, ".") {
		return strings.Replace(e, "e", "0e", 1)
	}
	return strings.Replace(e, "e", ".0e", 1)
}

func renderString(t *rapid.T, b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		mode := rapid.IntRange(0, 3).Draw(t, "esc")
		short := map[rune]string{'"': `\"`, '\\': `\\`, '\b': `\b`, '\f': `\f`, '\n': `\n`, '\r': `\r`, '\t': `\t`, '/': `\/`}
		switch {
		case mode == 0 && short[r] != "":
			b = append(b, short[r]...)
		case mode == 1 || r < 0x20 || r == '"' || r == '\\':
			if r >= 0x10000 {
				hi, lo := 0xD800+(r-0x10000)>>10, 0xDC00+(r-0x10000)&0x3FF
				b = append(b, `\u`+hex4s(hi)+`\u`+hex4s(lo)...)
			} else {
				h := hex4s(r)
				if mode == 2 {
					h = strings.ToUpper(h)
				}
				b = append(b, `\u`+h...)
			}
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

func hex4s(r rune) string { return strconv.FormatInt(int64(0x10000|r), 16)[1:] }

// sameValue is JSON value equality: objects as sets of members, numbers as
// doubles (so -0 == 0).
func sameValue(a, b *jv) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case 'b':
		return a.b == b.b
	case 'f':
		return a.f == b.f
	case 's':
		return a.s == b.s
	case 'a':
		return len(a.arr) == len(b.arr) && !slices.ContainsFunc(a.arr, func(x *jv) bool {
			return !sameValue(x, b.arr[slices.Index(a.arr, x)])
		})
	case 'o':
		if len(a.obj) != len(b.obj) {
			return false
		}
		for _, m := range a.obj {
			if !sameValue(m.v, lookup(b, m.name)) {
				return false
			}
		}
	}
	return true
}

func lookup(v *jv, name string) *jv {
	for _, m := range v.obj {
		if m.name == name {
			return m.v
		}
	}
	return nil
}

func TestPropertyIdempotent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := render(t, genValue(t, 3))
		c1, err := Canonicalize(in)
		if err != nil {
			t.Fatalf("Canonicalize(%q): %v", in, err)
		}
		c2, err := Canonicalize(c1)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", in, c1, c2, err)
		}
		// And it means the same as the input to encoding/json.
		var x, y any
		if json.Unmarshal(in, &x) != nil || json.Unmarshal(c1, &y) != nil || !reflect.DeepEqual(x, y) {
			t.Fatalf("meaning changed: %q -> %q", in, c1)
		}
	})
}

func TestPropertyLayoutInvariant(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(t, 3)
		a, b := render(t, v), render(t, v)
		ca, err := Canonicalize(a)
		if err != nil {
			t.Fatalf("Canonicalize(%q): %v", a, err)
		}
		cb, err := Canonicalize(b)
		if err != nil {
			t.Fatalf("Canonicalize(%q): %v", b, err)
		}
		if !bytes.Equal(ca, cb) {
			t.Fatalf("one value, two canonical forms:\n%q -> %q\n%q -> %q", a, ca, b, cb)
		}
	})
}

// On values where encoding/json's output is known to be RFC 8785 (no -0, no
// U+2028/U+2029 which it escapes, names without U+E000..U+FFFF which it
// sorts by UTF-8 bytes), the canonical form equals json.Marshal of a map.
func TestPropertyDifferentialEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(t, 3)
		if !jsonSafe(v) {
			t.Skip("outside encoding/json's RFC 8785 domain")
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(toAny(v)); err != nil {
			t.Fatal(err)
		}
		in := render(t, v)
		got, err := Canonicalize(in)
		if err != nil {
			t.Fatalf("Canonicalize(%q): %v", in, err)
		}
		if !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Fatalf("Canonicalize(%q)\n got %q\nwant %q", in, got, want.Bytes())
		}
	})
}

func jsonSafe(v *jv) bool {
	switch v.kind {
	case 'f':
		return !(v.f == 0 && math.Signbit(v.f))
	case 's':
		return !strings.ContainsAny(v.s, "\u2028\u2029")
	case 'a':
		return !slices.ContainsFunc(v.arr, func(e *jv) bool { return !jsonSafe(e) })
	case 'o':
		for _, m := range v.obj {
			for _, r := range m.name {
				if r >= 0xE000 && r <= 0xFFFF || r == 0x2028 || r == 0x2029 {
					return false
				}
			}
			if !jsonSafe(m.v) {
				return false
			}
		}
	}
	return true
}

func toAny(v *jv) any {
	switch v.kind {
	case 'b':
		return v.b
	case 'f':
		return v.f
	case 's':
		return v.s
	case 'a':
		out := []any{}
		for _, e := range v.arr {
			out = append(out, toAny(e))
		}
		return out
	case 'o':
		out := map[string]any{}
		for _, m := range v.obj {
			out[m.name] = toAny(m.v)
		}
		return out
	}
	return nil
}

// path is a list of steps: a member name, or an array index.
type step struct {
	name  string
	index int // -1 for a member
}

func paths(v *jv, prefix []step, out *[][]step) {
	switch v.kind {
	case 'a':
		for i, e := range v.arr {
			p := append(slices.Clone(prefix), step{index: i})
			*out = append(*out, p)
			paths(e, p, out)
		}
	case 'o':
		for _, m := range v.obj {
			p := append(slices.Clone(prefix), step{name: m.name, index: -1})
			*out = append(*out, p)
			paths(m.v, p, out)
		}
	}
}

func pointer(p []step) string {
	var b strings.Builder
	for _, s := range p {
		b.WriteByte('/')
		if s.index >= 0 {
			b.WriteString(strconv.Itoa(s.index))
		} else {
			b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s.name))
		}
	}
	return b.String()
}

func clone(v *jv) *jv {
	c := *v
	c.arr = nil
	c.obj = nil
	for _, e := range v.arr {
		c.arr = append(c.arr, clone(e))
	}
	if v.kind == 'a' && c.arr == nil {
		c.arr = []*jv{}
	}
	for _, m := range v.obj {
		c.obj = append(c.obj, jmember{m.name, clone(m.v)})
	}
	if v.kind == 'o' && c.obj == nil {
		c.obj = []jmember{}
	}
	return &c
}

// at returns the value at p, or nil if there is none. It follows a step by
// name in objects and by index in arrays, as RFC 6901 does.
func at(v *jv, p []step) *jv {
	for _, s := range p {
		switch {
		case v.kind == 'o' && s.index < 0:
			v = lookup(v, s.name)
		case v.kind == 'o':
			v = lookup(v, strconv.Itoa(s.index))
		case v.kind == 'a' && s.index >= 0 && s.index < len(v.arr):
			v = v.arr[s.index]
		case v.kind == 'a':
			// RFC 6901: a member name's pointer token selects an array's
			// element when it is an index ("0", or digits without a leading
			// zero): {"0": x} and [x] have the same value at /0.
			i, ok := modelIndex(s.name)
			if !ok || i >= len(v.arr) {
				return nil
			}
			v = v.arr[i]
		default:
			return nil
		}
		if v == nil {
			return nil
		}
	}
	return v
}

// modelIndex reads an RFC 6901 array index (the model's own, apart from the package's): "0", or decimal digits with
// no leading zero.
func modelIndex(token string) (int, bool) {
	if token == "" || len(token) > 1 && token[0] == '0' || len(token) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(token); i++ {
		if token[i] < '0' || token[i] > '9' {
			return 0, false
		}
		n = n*10 + int(token[i]-'0')
	}
	return n, true
}

// replace sets the value at p (which exists) to w; w == nil removes it.
func replace(v *jv, p []step, w *jv) *jv {
	if len(p) == 0 {
		return w
	}
	parent := at(v, p[:len(p)-1])
	s := p[len(p)-1]
	if parent.kind == 'a' {
		i := s.index
		if i < 0 {
			i, _ = modelIndex(s.name) // a member's pointer token on an array (see at)
		}
		if w == nil {
			parent.arr = slices.Delete(parent.arr, i, i+1)
		} else {
			parent.arr[i] = w
		}
		return v
	}
	i := slices.IndexFunc(parent.obj, func(m jmember) bool { return m.name == s.name })
	if w == nil {
		parent.obj = slices.Delete(parent.obj, i, i+1)
	} else {
		parent.obj[i].v = w
	}
	return v
}

func memberPaths(all [][]step) [][]step {
	var out [][]step
	for _, p := range all {
		if p[len(p)-1].index < 0 {
			out = append(out, p)
		}
	}
	return out
}

// A change to a selected value changes the fingerprint; the fingerprint
// stays only when the selected parts are the same JSON value. With an
// excluded member, changing, removing or adding it never changes it.
func TestPropertyFingerprintExclude(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genObject(t, 3)
		var all [][]step
		paths(v, nil, &all)
		mp := memberPaths(all)
		opts := []Option{AllowImpreciseNumbers()}
		var ex []step
		if len(mp) > 0 && rapid.Bool().Draw(t, "exclude") {
			ex = mp[rapid.IntRange(0, len(mp)-1).Draw(t, "ex")]
			opts = append(opts, Exclude(pointer(ex)))
		}
		sp, err := NewSpec("prop", 1, opts...)
		if err != nil {
			t.Fatal(err)
		}
		fp := func(v *jv) core.Fingerprint {
			in := render(t, v)
			f, err := sp.Of(in)
			if err != nil {
				t.Fatalf("Of(%q): %v", in, err)
			}
			return f
		}
		model := func(v *jv) *jv {
			if ex == nil || at(v, ex) == nil {
				return v
			}
			return replace(clone(v), ex, nil)
		}
		// Mutate: replace some value (or the root's member) by another.
		w := clone(v)
		if len(all) > 0 {
			p := all[rapid.IntRange(0, len(all)-1).Draw(t, "target")]
			w = replace(w, p, genValue(t, 2))
		} else {
			w.obj = append(w.obj, jmember{"new", genValue(t, 1)})
		}
		same := sameValue(model(v), model(w))
		if got := fp(v) == fp(w); got != same {
			t.Fatalf("fingerprints equal = %v, selected values equal = %v\nv: %q\nw: %q", got, same, render(t, v), render(t, w))
		}
		if ex != nil {
			x := clone(v)
			switch rapid.IntRange(0, 1).Draw(t, "how") {
			case 0:
				x = replace(x, ex, genValue(t, 2))
			case 1:
				x = replace(x, ex, nil)
			}
			if fp(v) != fp(x) {
				t.Fatalf("excluded %s changed the fingerprint:\nv: %q\nx: %q", pointer(ex), render(t, v), render(t, x))
			}
		}
	})
}

// With an include list, the fingerprint is equal exactly when every
// included pointer is absent in both or present with the same value.
func TestPropertyFingerprintInclude(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genObject(t, 3)
		var all [][]step
		paths(v, nil, &all)
		var inc [][]step
		var ptrs []string
		for _, p := range all {
			if rapid.IntRange(0, 3).Draw(t, "pick") == 0 && !slices.Contains(ptrs, pointer(p)) {
				inc = append(inc, p)
				ptrs = append(ptrs, pointer(p))
			}
		}
		inc = append(inc, []step{{name: "absent", index: -1}})
		ptrs = append(ptrs, "/absent")
		sp, err := NewSpec("prop", 1, Include(ptrs...), AllowImpreciseNumbers())
		if err != nil {
			t.Fatal(err)
		}
		w := clone(v)
		if len(all) > 0 {
			p := all[rapid.IntRange(0, len(all)-1).Draw(t, "target")]
			if rapid.Bool().Draw(t, "remove") {
				w = replace(w, p, nil)
			} else {
				w = replace(w, p, genValue(t, 2))
			}
		}
		same := true
		for _, p := range inc {
			same = same && sameValue(at(v, p), at(w, p))
		}
		fv, err1 := sp.Of(render(t, v))
		fw, err2 := sp.Of(render(t, w))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if got := fv == fw; got != same {
			t.Fatalf("fingerprints equal = %v, included values equal = %v\nptrs %q\nv: %q\nw: %q", got, same, ptrs, render(t, v), render(t, w))
		}
	})
}

// The fast number path agrees with the conversion path on every literal.
func TestPropertyNumberPaths(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lit := rapid.StringMatching(`-?(0|[1-9][0-9]{0,20})(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?`).Draw(t, "lit")
		got, err := Canonicalize([]byte(lit))
		f, perr := strconv.ParseFloat(lit, 64)
		if perr != nil {
			if err == nil {
				t.Fatalf("Canonicalize(%s) = %s, but it overflows", lit, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("Canonicalize(%s): %v", lit, err)
		}
		var want bytes.Buffer
		json.NewEncoder(&want).Encode(f)
		w := strings.TrimSpace(want.String())
		if f == 0 {
			w = "0"
		}
		if string(got) != w {
			t.Fatalf("Canonicalize(%s) = %s, want %s", lit, got, w)
		}
	})
}

// The precision rule makes accepted numbers one-to-one with doubles: two
// literals that Spec.Of accepts by default share a fingerprint exactly when
// they are the same decimal number.
func TestPropertyPrecisionInjective(t *testing.T) {
	strict := mustSpec(t, "prop", 1)
	litGen := rapid.StringMatching(`-?(0|[1-9][0-9]{0,17})(\.[0-9]{1,19})?([eE][-+]?[0-9]{1,3})?`)
	rapid.Check(t, func(t *rapid.T) {
		a := litGen.Draw(t, "a")
		b := a
		switch rapid.IntRange(0, 3).Draw(t, "how") {
		case 0:
			b = litGen.Draw(t, "b")
		case 1: // a neighbour: change the last digit
			i := strings.LastIndexAny(a, "0123456789")
			b = a[:i] + string(rune('0'+(a[i]-'0'+1)%10)) + a[i+1:]
		case 2: // another spelling or a longer literal
			b = rapid.SampledFrom([]string{a + "0", a + "1", a + "00000000000000000001"}).Draw(t, "suffix")
			if strings.ContainsAny(a, "eE") {
				b = a
			} else if !strings.Contains(a, ".") {
				b = strings.Replace(b, a, a+".", 1)
			}
		case 3:
			f, err := strconv.ParseFloat(a, 64)
			if err != nil {
				t.Skip("overflow")
			}
			b = strconv.FormatFloat(f, 'g', -1, 64)
		}
		fa, errA := strict.Of([]byte(a))
		fb, errB := strict.Of([]byte(b))
		if errA != nil || errB != nil {
			return
		}
		ra, ok1 := new(big.Rat).SetString(a)
		rb, ok2 := new(big.Rat).SetString(b)
		if !ok1 || !ok2 {
			t.Fatalf("big.Rat cannot parse %s or %s", a, b)
		}
		if (fa == fb) != (ra.Cmp(rb) == 0) {
			t.Fatalf("%s and %s: same fingerprint %v, same number %v", a, b, fa == fb, ra.Cmp(rb) == 0)
		}
	})
}
