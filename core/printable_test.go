package core

import (
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
