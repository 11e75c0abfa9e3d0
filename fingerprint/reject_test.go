package fingerprint

import (
	"errors"
	"strings"
	"testing"
)

// Every rejection the strict I-JSON profile makes: the kind and the byte
// offset are part of the contract.
func TestRejections(t *testing.T) {
	deep := strings.Repeat("[", DepthMaxDefault+1) + strings.Repeat("]", DepthMaxDefault+1)
	deepObj := strings.Repeat(`{"a":`, DepthMaxDefault+1) + "1" + strings.Repeat("}", DepthMaxDefault+1)
	tests := []struct {
		name string
		in   string
		kind error
		off  int64
	}{
		// Invalid UTF-8.
		{"bad byte in string", "\"a\xffb\"", ErrInvalidUTF8, 2},
		{"truncated sequence", "\"\xc3\"", ErrInvalidUTF8, 1},
		{"overlong encoding", "\"\xc0\xaf\"", ErrInvalidUTF8, 1},
		{"overlong 3 bytes", "\"\xe0\x80\xaf\"", ErrInvalidUTF8, 1},
		{"beyond U+10FFFF", "\"\xf4\x90\x80\x80\"", ErrInvalidUTF8, 1},
		{"bad byte in member name", "{\"\xfe\":1}", ErrInvalidUTF8, 2},
		{"bad byte outside a string", "[1,\xff]", ErrSyntax, 3},
		// Surrogates, raw (invalid UTF-8) and escaped.
		{"raw lone high surrogate", "\"\xed\xa0\xbd\"", ErrInvalidUTF8, 1},
		{"raw lone low surrogate", "\"\xed\xb8\x82\"", ErrInvalidUTF8, 1},
		{"raw CESU-8 pair", "\"\xed\xa0\xbd\xed\xb8\x82\"", ErrInvalidUTF8, 1},
		{"lone high escape", `"a\ud83d"`, ErrSurrogate, 2},
		{"lone high escape then text", `"\ud83dx"`, ErrSurrogate, 1},
		{"lone low escape", `"\ude02"`, ErrSurrogate, 1},
		{"reversed pair", `"\ude02\ud83d"`, ErrSurrogate, 1},
		{"mispaired high+high", `"\ud83d\ud83d"`, ErrSurrogate, 1},
		{"mispaired high+BMP", `"\ud83d\u0041"`, ErrSurrogate, 1},
		{"high escape then bad escape", `"\ud83d\u00zz"`, ErrSyntax, 7},
		{"surrogate in member name", `{"\udc00":1}`, ErrSurrogate, 2},
		// Duplicate member names, compared after unescaping.
		{"duplicate", `{"a":1,"a":2}`, ErrDuplicateName, 7},
		{"duplicate after unescaping", `{"a":1,"\u0061":2}`, ErrDuplicateName, 7},
		{"duplicate escaped solidus", `{"a/b":1,"a\/b":2}`, ErrDuplicateName, 9},
		{"duplicate surrogate pair", `{"😂":1,"\ud83d\ude02":2}`, ErrDuplicateName, 10},
		{"duplicate unsorted", `{"b":1,"a":2,"b":3}`, ErrDuplicateName, 13},
		{"duplicate nested", `[{"x":{"y":1,"y":1}}]`, ErrDuplicateName, 13},
		{"duplicate among many", `{"m":1,"l":1,"k":1,"j":1,"i":1,"h":1,"g":1,"f":1,"e":1,"d":1,"c":1,"b":1,"a":1,"z":1,"k":2}`, ErrDuplicateName, 85},
		// Numbers outside the grammar.
		{"leading zero", `01`, ErrNumber, 0},
		{"negative leading zero", `-01`, ErrNumber, 0},
		{"plus sign", `+1`, ErrNumber, 0},
		{"leading dot", `.5`, ErrNumber, 0},
		{"trailing dot", `1.`, ErrNumber, 2},
		{"dot before exponent", `1.e5`, ErrNumber, 2},
		{"hex", `0x10`, ErrNumber, 1},
		{"NaN", `NaN`, ErrNumber, 0},
		{"Infinity", `Infinity`, ErrNumber, 0},
		{"-Infinity", `-Infinity`, ErrNumber, 1},
		{"lone minus", `-`, ErrNumber, 1},
		{"minus minus", `--1`, ErrNumber, 1},
		{"empty exponent", `1e`, ErrNumber, 2},
		{"exponent sign only", `1e+`, ErrNumber, 3},
		{"two dots", `1.2.3`, ErrNumber, 3},
		{"letter suffix", `[12a]`, ErrNumber, 3},
		{"number in array", `[1,01]`, ErrNumber, 3},
		// Overflow is an error, never clamped to the largest double.
		{"overflow", `1e400`, ErrNumberOverflow, 0},
		{"negative overflow", `[-1e400]`, ErrNumberOverflow, 1},
		{"overflow past half ulp", `1.7976931348623159e308`, ErrNumberOverflow, 0},
		{"overflow long mantissa", "1" + strings.Repeat("0", 400), ErrNumberOverflow, 0},
		{"overflow huge exponent", `1e99999999999999999999`, ErrNumberOverflow, 0},
		// Trailing data and byte-order marks.
		{"two values", `{} {}`, ErrTrailingData, 3},
		{"trailing comma", `[1],`, ErrTrailingData, 3},
		{"trailing garbage", "1 x", ErrTrailingData, 2},
		{"trailing NUL", "true\x00", ErrTrailingData, 4},
		{"byte-order mark", "\xef\xbb\xbf{}", ErrBOM, 0},
		// Nesting.
		{"too deep arrays", deep, ErrTooDeep, DepthMaxDefault},
		{"too deep objects", deepObj, ErrTooDeep, 5 * DepthMaxDefault},
		// Plain syntax errors.
		{"empty", ``, ErrSyntax, 0},
		{"white space only", " \n", ErrSyntax, 2},
		{"unterminated string", `"abc`, ErrSyntax, 0},
		{"unterminated array", `[1,2`, ErrSyntax, 4},
		{"unterminated object", `{"a":1`, ErrSyntax, 6},
		{"trailing comma in array", `[1,]`, ErrSyntax, 3},
		{"trailing comma in object", `{"a":1,}`, ErrSyntax, 7},
		{"missing colon", `{"a" 1}`, ErrSyntax, 5},
		{"unquoted name", `{a:1}`, ErrSyntax, 1},
		{"single quotes", `'a'`, ErrSyntax, 0},
		{"raw newline in string", "\"a\nb\"", ErrSyntax, 2},
		{"raw tab in string", "\"a\tb\"", ErrSyntax, 2},
		{"bad escape", `"\x41"`, ErrSyntax, 1},
		{"short unicode escape", `"\u12"`, ErrSyntax, 1},
		{"bad literal", `nul`, ErrSyntax, 0},
		{"literal with suffix", `[truex]`, ErrSyntax, 5},
		{"capital literal", `True`, ErrSyntax, 0},
		{"comment", `[1 /* c */]`, ErrSyntax, 3},
		{"vertical tab as white space", "\v1", ErrSyntax, 0},
		{"NBSP as white space", "\xc2\xa01", ErrSyntax, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Canonicalize([]byte(tc.in))
			if err == nil {
				t.Fatalf("Canonicalize(%q) = %q, want an error", tc.in, out)
			}
			if !errors.Is(err, tc.kind) {
				t.Fatalf("Canonicalize(%q): %v, want kind %v", tc.in, err, tc.kind)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
			if e.Offset != tc.off {
				t.Fatalf("Canonicalize(%q): offset %d, want %d (%v)", tc.in, e.Offset, tc.off, err)
			}
			if !strings.Contains(err.Error(), "byte offset") {
				t.Fatalf("message %q does not say where", err)
			}
			// AppendCanonical leaves dst as it was.
			dst := []byte("keep")
			got, err2 := AppendCanonical(dst, []byte(tc.in))
			if err2 == nil || string(got) != "keep" {
				t.Fatalf("AppendCanonical = %q, %v", got, err2)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	// Size: the default, a custom limit, and no limit.
	big := []byte(`"` + strings.Repeat("a", BytesMaxDefault-1) + `"`)
	if _, err := Canonicalize(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%d bytes: %v, want ErrTooLarge", len(big), err)
	}
	if _, err := Canonicalize(big[1 : len(big)-1 : len(big)-1]); err == nil {
		t.Fatal("want an error for an unquoted string")
	}
	if _, err := (Canonicalizer{BytesMax: -1}).Canonicalize(big); err != nil {
		t.Fatalf("BytesMax -1: %v", err)
	}
	c := Canonicalizer{BytesMax: 8}
	if _, err := c.Canonicalize([]byte(`[1,2,3]`)); err != nil {
		t.Fatalf("7 bytes under a limit of 8: %v", err)
	}
	_, err := c.Canonicalize([]byte(`[1,2,3,4]`))
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrTooLarge || e.Offset != 8 {
		t.Fatalf("9 bytes under a limit of 8: %v", err)
	}

	// Depth: exactly the limit passes, one more fails.
	d := Canonicalizer{DepthMax: 3}
	if _, err := d.Canonicalize([]byte(`[{"a":[1]}]`)); err != nil {
		t.Fatalf("depth 3: %v", err)
	}
	if _, err := d.Canonicalize([]byte(`[{"a":[[1]]}]`)); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("depth 4: %v, want ErrTooDeep", err)
	}
	ok := strings.Repeat("[", DepthMaxDefault) + strings.Repeat("]", DepthMaxDefault)
	if _, err := Canonicalize([]byte(ok)); err != nil {
		t.Fatalf("default depth: %v", err)
	}
	// DepthMax is capped at DepthMax, so the recursion stays bounded.
	huge := Canonicalizer{DepthMax: 1 << 30, BytesMax: -1}
	deep := strings.Repeat("[", DepthMax+1) + strings.Repeat("]", DepthMax+1)
	if _, err := huge.Canonicalize([]byte(deep)); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("depth %d: %v, want ErrTooDeep", DepthMax+1, err)
	}
	if _, err := huge.Canonicalize([]byte(deep[1 : len(deep)-1])); err != nil {
		t.Fatalf("depth %d: %v", DepthMax, err)
	}
}

func TestErrorMessages(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"a":2}`:  `fingerprint: duplicate member name: member name "a" appears twice in one object (first at byte offset 1) at byte offset 7`,
		`[1e400]`:        `fingerprint: number overflows a double: number 1e400 is beyond the largest double, 1.7976931348623157e+308 at byte offset 1`,
		`"\ud800"`:       `fingerprint: invalid surrogate escape: lone high surrogate \ud800 (not followed by a low surrogate) at byte offset 1`,
		"\"\xed\xa0\x80": `fingerprint: invalid UTF-8: surrogate U+D800 encoded in UTF-8 (a lone or CESU-8 surrogate) at byte offset 1`,
	} {
		_, err := Canonicalize([]byte(in))
		if err == nil || err.Error() != want {
			t.Errorf("Canonicalize(%q):\n got %v\nwant %s", in, err, want)
		}
	}
}
