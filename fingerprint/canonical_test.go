package fingerprint

import (
	"bytes"
	"testing"
)

func TestCanonicalizeCases(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// White space goes; order of array elements stays.
		{" [ 3 , 1 ,\t2 ]\r\n", `[3,1,2]`},
		{`{ }`, `{}`},
		{`[ ]`, `[]`},
		{`"x"`, `"x"`},
		{`true`, `true`},
		{` null `, `null`},
		// Member names sort by UTF-16 code units of their unescaped value.
		{`{"b":1,"a":2,"c":{"z":1,"y":2}}`, `{"a":2,"b":1,"c":{"y":2,"z":1}}`},
		{`{"\u0062":1,"a":2}`, `{"a":2,"b":1}`},
		{`{"ab":1,"a":2,"":3}`, `{"":3,"a":2,"ab":1}`},
		// An emoji (a surrogate pair, D83D...) sorts before U+FB33 and U+E000
		// although its UTF-8 bytes and code point are larger.
		{"{\"\ufb33\":1,\"\U0001f602\":2}", "{\"\U0001f602\":2,\"\ufb33\":1}"},
		{`{"\ue000":1,"\ud800\udc00":2,"\ud7ff":3}`, "{\"\ud7ff\":3,\"\U00010000\":2,\"\ue000\":1}"},
		{`{"\uffff":1,"\udbff\udfff":2}`, "{\"\U0010ffff\":2,\"\uffff\":1}"},
		// Escaped names sort by their value, not their escape.
		{`{"\n":1,"\"":2,"\\":3,"A":4}`, `{"\n":1,"\"":2,"A":4,"\\":3}`},
		// Strings: only U+0000..U+001F, '"' and '\' are escaped.
		{`"\u0000\u0001\u001f\b\t\n\f\r"`, `"\u0000\u0001\u001f\b\t\n\f\r"`},
		{`"\u0008\u0009\u000A\u000c\u000D\u000B\u001F"`, `"\b\t\n\f\r\u000b\u001f"`},
		{`"\/\"\\"`, `"/\"\\"`},
		{`"<>&'\u003c\u003e\u0026"`, `"<>&'<>&"`},
		{`"\u2028\u2029\u007f\u0080"`, "\"\u2028\u2029\u007f\u0080\""},
		{"\"\u2028\u007f\"", "\"\u2028\u007f\""},
		{`"\uD83D\uDE02\u00e9\u00E9"`, `"😂éé"`},
		{`"\ufeff"`, "\"\ufeff\""},
		{"\"\xef\xbb\xbf\"", "\"\ufeff\""}, // U+FEFF inside a string is a character
		{`"A\u030a"`, "\"A\u030a\""},       // no normalization
		// Numbers: ECMAScript Number::toString.
		{`[0,-0,0.0,-0.0,0e5,-0E-5]`, `[0,0,0,0,0,0]`},
		{`[1,-1,10,1.0,1.50,100e-2,1E2,1e+2]`, `[1,-1,10,1,1.5,1,100,100]`},
		{`[1e20,1e21,1e-6,1e-7,123e-9,0.000001,0.0000001]`, `[100000000000000000000,1e+21,0.000001,1e-7,1.23e-7,0.000001,1e-7]`},
		{`[1.5e300,-1.5e-300,5e-324,2e-324,1e-400]`, `[1.5e+300,-1.5e-300,5e-324,0,0]`},
		{`[9007199254740993,9007199254740992,18014398509481985]`, `[9007199254740992,9007199254740992,18014398509481984]`},
		{`[0.1,0.30000000000000004,0.3000000000000000444]`, `[0.1,0.30000000000000004,0.30000000000000004]`},
		{`123456789012345678901234567890`, `1.2345678901234568e+29`},
		{`[999999999999999999999,1e21,999999999999999900000]`, `[1e+21,1e+21,999999999999999900000]`},
		{`0.00000000000000000000000000000000000000000000000001`, `1e-50`},
		{`-1234.5678e-2`, `-12.345678`},
	} {
		got, err := Canonicalize([]byte(tc.in))
		if err != nil {
			t.Errorf("Canonicalize(%s): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Canonicalize(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func TestCompareNames(t *testing.T) {
	// Sorted by UTF-16 code units.
	sorted := []string{"", "\x00", "A", "a", "ab", "\u00e9", "\u07ff", "\u0800", "\ud7ff", "\U00010000", "\U0001f602", "\U0010ffff", "\ue000", "\ufb33", "\uffff"}
	for i := range sorted {
		for j := range sorted {
			got := compareNames([]byte(sorted[i]), []byte(sorted[j]))
			if sign(got) != sign(i-j) {
				t.Errorf("compareNames(%q, %q) = %d, want sign %d", sorted[i], sorted[j], got, sign(i-j))
			}
		}
	}
}

func sign(x int) int {
	switch {
	case x < 0:
		return -1
	case x > 0:
		return 1
	}
	return 0
}

func TestUnescapeMatchesDecoder(t *testing.T) {
	// The name unescaper agrees with the string canonicalizer's decoding.
	for _, s := range []string{`a\u0062c`, `\ud83d\ude02x`, `\n\t\"\\\/`, `\u00e9\u20ac`} {
		got := unescape(nil, []byte(s))
		canon, err := Canonicalize([]byte(`"` + s + `"`))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := Canonicalize([]byte(`"` + string(escapeForTest(got)) + `"`))
		if !bytes.Equal(canon, want) {
			t.Errorf("unescape(%s) = %q", s, got)
		}
	}
}

func escapeForTest(b []byte) []byte {
	var out []byte
	for _, r := range string(b) {
		out = appendRune(out, r)
	}
	return out
}
