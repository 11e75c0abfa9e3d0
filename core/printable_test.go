package core

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestPrintableIsTheByteLoop: the word-at-a-time check agrees with the plain
// loop on every string, every boundary byte at every position included.
func TestPrintableIsTheByteLoop(t *testing.T) {
	naive := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] > 0x7e {
				return false
			}
		}
		return true
	}
	base := []byte("0123456789abcdef0123456789abcdef0")
	for pos := range base {
		for c := 0; c < 256; c++ {
			b := append([]byte(nil), base...)
			b[pos] = byte(c)
			for _, s := range []string{string(b), string(b[:pos+1]), string(b[pos:])} {
				if printable(s) != naive(s) {
					t.Fatalf("byte 0x%02x at %d of %q: printable %t", c, pos, s, printable(s))
				}
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		s := string(rapid.SliceOf(rapid.Byte()).Draw(t, "s"))
		if printable(s) != naive(s) {
			t.Fatalf("%q", s)
		}
	})
}

// TestScopeShortcutIsThePartChecks: Validate's one-test shortcut gives the
// answer of the part-by-part checks on every scope, at every length limit
// and with every kind of byte (space, control, DEL, non-ASCII, bad UTF-8).
func TestScopeShortcutIsThePartChecks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := drawScope(t)
		max := rapid.SampledFrom([]int{KeyBytesMin, 64, KeyBytesMax}).Draw(t, "key bytes max")
		got, want := s.Validate(max), s.validateParts(max)
		if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
			t.Fatalf("%q: Validate %v, part by part %v", s, got, want)
		}
	})
}

// TestFingerprintWordsAreTheArrays: IsZero and same, a word at a time, agree
// with == on the arrays, for fingerprints that differ in one byte anywhere.
func TestFingerprintWordsAreTheArrays(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var f Fingerprint
		if rapid.Bool().Draw(t, "random") {
			copy(f[:], rapid.SliceOfN(rapid.Byte(), FingerprintBytes, FingerprintBytes).Draw(t, "f"))
		}
		g := f
		if rapid.Bool().Draw(t, "differ") {
			i := rapid.IntRange(0, FingerprintBytes-1).Draw(t, "at")
			g[i] ^= byte(rapid.IntRange(1, 255).Draw(t, "by"))
		}
		if f.same(&g) != (f == g) || g.same(&f) != (f == g) {
			t.Fatalf("same(%x, %x) = %t", f, g, f.same(&g))
		}
		if f.IsZero() != (f == Fingerprint{}) || g.IsZero() != (g == Fingerprint{}) {
			t.Fatalf("IsZero(%x) = %t, IsZero(%x) = %t", f, f.IsZero(), g, g.IsZero())
		}
	})
}

// drawScope draws a scope whose parts sit at or next to every length limit,
// each with at most one odd byte (or rune) at one place: space, control,
// DEL, non-ASCII, bad UTF-8.
func drawScope(t *rapid.T) Scope {
	part := func(name string) string {
		alphabet := []string{"a", "Z", "0", "-", " ", "\t", "\x7f", "\x00", "é", "\xff", "\u0085"}
		n := rapid.SampledFrom([]int{0, 1, 15, 16, 17, 254, 255, 256}).Draw(t, name+" length")
		b := []byte(strings.Repeat("k", n))
		if n > 0 && rapid.Bool().Draw(t, name+" odd") {
			at := rapid.IntRange(0, n-1).Draw(t, name+" at")
			b = append(b[:at], append([]byte(rapid.SampledFrom(alphabet).Draw(t, name+" byte")), b[at+1:]...)...)
		}
		return string(b)
	}
	return Scope{Tenant: part("tenant"), Principal: part("principal"), UseCase: part("use case"), Key: part("key")}
}
