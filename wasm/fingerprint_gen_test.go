package wasmcore

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/idemkit/idem/fingerprint"
	"github.com/idemkit/idem/wasm/internal/fpabi"
)

// Generators of fingerprint specs and JSON-ish bodies, for the differential
// test of fingerprint.wasm and for the Node fixture. Member names and pointer
// tokens come from one small pool, so that pointers select, exclude and miss
// members of the bodies, and duplicates happen.

// fpTokens are the member names and pointer tokens: array indexes and
// not-quite indexes, the characters RFC 6901 escapes, non-ASCII.
var fpTokens = []string{"a", "b", "id", "0", "1", "2", "01", "-", "", "~", "/", "a/b", "m~n", "é", "\U0001F602", "\uFB33"}

// fpCase is a spec and bodies to fingerprint with it.
type fpCase struct {
	Spec   fpabi.SpecRequest
	Opts   []fingerprint.Option // the same spec as NewSpec's options, drawn independently of SpecRequest.Options
	Bodies [][]byte
}

// fpCaseGen draws a spec and n bodies. With validUTF8, the use case and the
// pointers are valid UTF-8 (a JavaScript string can carry nothing else).
func fpCaseGen(validUTF8 bool, n int) *rapid.Generator[fpCase] {
	return rapid.Custom(func(t *rapid.T) fpCase {
		var c fpCase
		c.Spec, c.Opts = drawFPSpec(t, validUTF8)
		for i := range n {
			c.Bodies = append(c.Bodies, drawFPBody(t, "body"+strconv.Itoa(i)))
		}
		return c
	})
}

// drawFPSpec draws a spec as a request and as options. Include and Exclude
// are given in one or more calls (repeated calls add pointers).
func drawFPSpec(t *rapid.T, validUTF8 bool) (fpabi.SpecRequest, []fingerprint.Option) {
	var r fpabi.SpecRequest
	var opts []fingerprint.Option
	if validUTF8 {
		r.UseCase = rapid.SampledFrom([]string{"payments.create", "", "a|b", "é\U0001F602", "x\x00y"}).Draw(t, "use_case")
	} else {
		r.UseCase = string(rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(t, "use_case"))
	}
	r.SchemaVersion = rapid.OneOf(rapid.Uint32Range(0, 3), rapid.Uint32()).Draw(t, "schema_version")
	pointers := func(label string, min, max int) (all []string, calls [][]string) {
		for i := range rapid.IntRange(1, 2).Draw(t, label+"_calls") {
			ps := rapid.SliceOfN(fpPointerGen(validUTF8), min*(1-i), max).Draw(t, label)
			all = append(all, ps...)
			calls = append(calls, ps)
		}
		return all, calls
	}
	if rapid.Bool().Draw(t, "include_given") {
		var calls [][]string
		if rapid.IntRange(0, 8).Draw(t, "include_none") != 4 { // else Include given no pointer
			r.Include, calls = pointers("include", 1, 3)
		}
		r.Include = append([]string{}, r.Include...) // given, even with no pointer
		opts = append(opts, fingerprint.Include())
		for _, ps := range calls {
			opts = append(opts, fingerprint.Include(ps...))
		}
	}
	if rapid.IntRange(0, 2).Draw(t, "exclude_given") > 0 {
		var calls [][]string
		r.Exclude, calls = pointers("exclude", 0, 3)
		for _, ps := range calls {
			opts = append(opts, fingerprint.Exclude(ps...))
		}
	}
	if r.RequireIncluded = rapid.IntRange(0, 3).Draw(t, "require_included") == 0; r.RequireIncluded {
		opts = append(opts, fingerprint.RequireIncluded())
	}
	if r.AllowImpreciseNumbers = rapid.IntRange(0, 3).Draw(t, "allow_imprecise") == 0; r.AllowImpreciseNumbers {
		opts = append(opts, fingerprint.AllowImpreciseNumbers())
	}
	if rapid.IntRange(0, 2).Draw(t, "bytes_limit") == 0 {
		r.BytesMax = rapid.SampledFrom([]int64{-1, 1, 5, 20, 64, 200}).Draw(t, "bytes_max")
	}
	if rapid.IntRange(0, 2).Draw(t, "depth_limit") == 0 {
		r.DepthMax = rapid.SampledFrom([]int64{1, 2, 1, 2, 3, -3, fingerprint.DepthMax + 1}).Draw(t, "depth_max")
	}
	if r.BytesMax != 0 || r.DepthMax != 0 {
		opts = append(opts, fingerprint.WithLimits(fingerprint.Canonicalizer{BytesMax: int(r.BytesMax), DepthMax: int(r.DepthMax)}))
	}
	return r, opts
}

// fpPointerGen draws JSON Pointers: tokens of the pool, escaped, and
// malformed ones.
func fpPointerGen(validUTF8 bool) *rapid.Generator[string] {
	bad := []string{"a", "~", "/~", "/~2", "/a~", "//"}
	if !validUTF8 {
		bad = append(bad, "/\xff", "\xc3")
	}
	return rapid.Custom(func(t *rapid.T) string {
		// Rare events are a middle value: rapid draws the ends of a range
		// more often.
		switch rapid.IntRange(0, 11).Draw(t, "shape") {
		case 5:
			return rapid.SampledFrom(bad).Draw(t, "bad")
		case 6:
			return "" // the whole body
		}
		var b strings.Builder
		for range rapid.IntRange(1, 3).Draw(t, "depth") {
			b.WriteByte('/')
			tok := rapid.SampledFrom(fpTokens).Draw(t, "token")
			b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
		}
		return b.String()
	})
}

// drawFPBody draws a body: a JSON value with white space, often broken.
func drawFPBody(t *rapid.T, label string) []byte {
	if rapid.IntRange(0, 19).Draw(t, label+"_random") == 0 {
		return rapid.SliceOfN(rapid.Byte(), 0, 24).Draw(t, label+"_bytes")
	}
	var b []byte
	if rapid.IntRange(0, 29).Draw(t, label+"_bom") == 0 {
		b = append(b, 0xEF, 0xBB, 0xBF)
	}
	b = appendWS(t, b)
	b = appendJSONValue(t, b, rapid.IntRange(0, 4).Draw(t, label+"_depth"))
	b = appendWS(t, b)
	switch rapid.IntRange(0, 24).Draw(t, label+"_damage") {
	case 0:
		b = append(b, rapid.SampledFrom([]string{"x", " 1", "]", "}", "{}", "\x00", "\xff"}).Draw(t, "trailing")...)
	case 1:
		if len(b) > 0 {
			b = b[:rapid.IntRange(0, len(b)-1).Draw(t, "cut")]
		}
	case 2:
		if len(b) > 0 {
			i := rapid.IntRange(0, len(b)-1).Draw(t, "flip_at")
			b[i] = rapid.Byte().Draw(t, "flip_to")
		}
	}
	return b
}

func appendWS(t *rapid.T, b []byte) []byte {
	return append(b, rapid.SampledFrom([]string{"", "", "", " ", "\n", "\t", "\r\n ", "  "}).Draw(t, "ws")...)
}

func appendJSONValue(t *rapid.T, b []byte, depth int) []byte {
	kinds := 4
	if depth > 0 {
		kinds = 8
	}
	switch k := rapid.IntRange(0, kinds-1).Draw(t, "kind"); min(k, 4+k%2) { // 4..7: containers, half arrays
	case 0:
		return append(b, rapid.SampledFrom([]string{"null", "true", "false", "null", "true", "false", "nul", "True"}).Draw(t, "literal")...)
	case 1:
		return append(b, fpNumberGen.Draw(t, "number")...)
	case 2, 3:
		return appendJSONString(t, b, "")
	case 4:
		b = append(b, '[')
		for i := range rapid.IntRange(0, 4).Draw(t, "len") {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendWS(t, b)
			b = appendJSONValue(t, b, depth-1)
			b = appendWS(t, b)
		}
		return append(b, ']')
	}
	b = append(b, '{')
	names := fpTokens
	if rapid.IntRange(0, 3).Draw(t, "few_names") == 0 {
		names = fpTokens[:3] // duplicates, likely
	}
	for i := range rapid.IntRange(0, 5).Draw(t, "members") {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendWS(t, b)
		b = appendJSONString(t, b, rapid.SampledFrom(names).Draw(t, "name"))
		b = appendWS(t, b)
		b = append(b, ':')
		b = appendWS(t, b)
		b = appendJSONValue(t, b, depth-1)
	}
	return append(b, '}')
}

// appendJSONString writes a string: name, written plainly or with escapes
// (so that "a" and "\u0061" collide), or, for name "", drawn pieces of text,
// escapes, surrogates (paired, lone, reversed), control characters and
// bytes that are not UTF-8.
func appendJSONString(t *rapid.T, b []byte, name string) []byte {
	b = append(b, '"')
	if name != "" {
		for _, r := range name {
			b = appendStringRune(t, b, r)
		}
		return append(b, '"')
	}
	for range rapid.IntRange(0, 5).Draw(t, "pieces") {
		switch rapid.IntRange(0, 11).Draw(t, "piece") {
		case 0, 1, 8, 9:
			b = append(b, rapid.SampledFrom([]string{"a", "xyz", " ", "/", "<>&", "é", "\u2028", "\U0001F602", "\uFB33", "\u007f", "\uFEFF"}).Draw(t, "text")...)
		case 2, 10:
			b = append(b, rapid.SampledFrom([]string{`\n`, `\t`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\u0000`, `\u001F`, `\u00e9`, `\u2028`, `\uFFFF`, `\x`, `\u12`}).Draw(t, "escape")...)
		case 3:
			b = appendStringRune(t, b, rapid.Int32Range(0, 0x10FFFF).Filter(func(r rune) bool { return utf8.ValidRune(r) }).Draw(t, "rune"))
		case 4:
			hi, lo := rapid.IntRange(0xD800, 0xDBFF).Draw(t, "high"), rapid.IntRange(0xDC00, 0xDFFF).Draw(t, "low")
			switch rapid.IntRange(0, 3).Draw(t, "surrogates") {
			case 0:
				b = appendU4(appendU4(b, hi), lo)
			case 1:
				b = appendU4(b, hi)
			case 2:
				b = appendU4(b, lo)
			case 3:
				b = appendU4(appendU4(b, lo), hi)
			}
		case 5:
			b = append(b, rapid.SampledFrom([]string{"\x00", "\x1f", "\n", "\xff", "\xc0\x80", "\xed\xa0\x80", "\xe2\x82", "\xf4\x90\x80\x80"}).Draw(t, "raw")...)
		default:
			b = append(b, rapid.SampledFrom(fpTokens).Draw(t, "token")...)
		}
	}
	return append(b, '"')
}

// appendStringRune writes r in a JSON string, raw or as a \u escape (a
// surrogate pair beyond the BMP).
func appendStringRune(t *rapid.T, b []byte, r rune) []byte {
	if r == '"' || r == '\\' || r < 0x20 || rapid.IntRange(0, 5).Draw(t, "escape_rune") == 0 {
		if r >= 0x10000 {
			r -= 0x10000
			return appendU4(appendU4(b, 0xD800+int(r>>10)), 0xDC00+int(r&0x3FF))
		}
		return appendU4(b, int(r))
	}
	return utf8.AppendRune(b, r)
}

func appendU4(b []byte, u int) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[u>>12&15], hex[u>>8&15], hex[u>>4&15], hex[u&15])
}

// fpNumberGen draws number literals of every shape: integers near 2^53 and
// beyond, long mantissas, tiny and huge exponents, negative zero, and
// literals outside JSON's grammar.
var fpNumberGen = rapid.OneOf(
	rapid.SampledFrom([]string{
		"0", "-0", "-0.0", "0e0", "1", "-1", "1.5", "0.1", "1e21", "1e20", "1e-6", "1e-7", "1E+2",
		"9007199254740991", "9007199254740992", "9007199254740993", "-9007199254740993", "9007199254740993.0",
		"9.007199254740993e15", "1e16", "9007199254740991.0", "0.10000000000000000001", "333333333.33333329",
		"0.30000000000000004", "1e-400", "-1e-400", "1e400", "-1e400", "1.7976931348623157e308", "1.7976931348623159e308",
		"5e-324", "2.4703282292062328e-324", "123456789012345678901234567890",
		"01", "+1", ".5", "1.", "0x10", "NaN", "Infinity", "-", "1e", "1e+", "--1", "1.e3",
	}),
	rapid.Custom(func(t *rapid.T) string {
		var s strings.Builder
		if rapid.Bool().Draw(t, "minus") {
			s.WriteByte('-')
		}
		digits := func(label string, first byte, max int) {
			s.WriteByte(first)
			for range rapid.IntRange(0, max).Draw(t, label) {
				s.WriteByte(byte('0' + rapid.IntRange(0, 9).Draw(t, "digit")))
			}
		}
		if rapid.IntRange(0, 3).Draw(t, "zero") == 0 {
			s.WriteByte('0')
		} else {
			digits("int", byte('1'+rapid.IntRange(0, 8).Draw(t, "lead")), 24)
		}
		if rapid.Bool().Draw(t, "frac") {
			s.WriteByte('.')
			digits("frac", byte('0'+rapid.IntRange(0, 9).Draw(t, "f0")), 24)
		}
		if rapid.Bool().Draw(t, "exp") {
			s.WriteString(rapid.SampledFrom([]string{"e", "E", "e+", "e-", "E-"}).Draw(t, "e"))
			s.WriteString(strconv.Itoa(rapid.OneOf(rapid.IntRange(0, 30), rapid.IntRange(0, 400), rapid.IntRange(290, 330)).Draw(t, "exponent")))
		}
		return s.String()
	}),
)
