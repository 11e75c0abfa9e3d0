package fingerprint

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The official RFC 8785 test data (testdata/jcs, see its README.md for
// provenance): every input canonicalizes byte for byte to its output.
func TestRFC8785Files(t *testing.T) {
	inputs, err := filepath.Glob("testdata/jcs/input/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) != 6 {
		t.Fatalf("found %d RFC 8785 inputs, want 6", len(inputs))
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			src := mustRead(t, in)
			want := mustRead(t, filepath.Join("testdata/jcs/output", name+".json"))
			hexWant := strings.Fields(string(mustRead(t, filepath.Join("testdata/jcs/outhex", name+".txt"))))
			wantHex, err := hex.DecodeString(strings.Join(hexWant, ""))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want, wantHex) {
				t.Fatalf("testdata disagrees with itself: output/%s.json != outhex/%s.txt", name, name)
			}
			got, err := Canonicalize(src)
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Canonicalize(%s)\n got %q\nwant %q", in, got, want)
			}
			// Appending after existing content gives the same bytes.
			prefix := []byte("prefix")
			got2, err := AppendCanonical(prefix, src)
			if err != nil || !bytes.Equal(got2, append([]byte("prefix"), want...)) {
				t.Fatalf("AppendCanonical: %q, %v", got2, err)
			}
			// The canonical form is a fixed point.
			again, err := Canonicalize(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("Canonicalize(output) = %q, %v", again, err)
			}
		})
	}
}

// RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical forms.
func TestRFC8785AppendixB(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(string(mustRead(t, "testdata/jcs/rfc8785-appendixB.txt"))), "\n")
	if len(lines) != 23 {
		t.Fatalf("found %d rows, want 23", len(lines))
	}
	for _, line := range lines {
		bitsHex, want, ok := strings.Cut(strings.TrimSpace(line), ",")
		if !ok {
			t.Fatalf("bad row %q", line)
		}
		raw, err := hex.DecodeString(bitsHex)
		if err != nil || len(raw) != 8 {
			t.Fatalf("bad row %q", line)
		}
		x := math.Float64frombits(binary.BigEndian.Uint64(raw))
		// The shortest literal (fast path when short) and a 17-digit one
		// (always the conversion path) must both give the RFC's string.
		for _, lit := range []string{
			strconv.FormatFloat(x, 'e', -1, 64),
			strconv.FormatFloat(x, 'e', 16, 64),
			strconv.FormatFloat(x, 'f', -1, 64),
		} {
			got, err := Canonicalize([]byte(lit))
			if err != nil {
				t.Errorf("%s: Canonicalize(%s): %v", bitsHex, lit, err)
				continue
			}
			if string(got) != want {
				t.Errorf("%s: Canonicalize(%s) = %s, want %s", bitsHex, lit, got, want)
			}
		}
	}
	// The table's NaN and Infinity rows must raise an error: JSON cannot
	// spell them, and an overflowing literal is not clamped or turned into
	// Infinity.
	for _, lit := range []string{"NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1.7976931348623159e308"} {
		_, err := Canonicalize([]byte(lit))
		if err == nil {
			t.Errorf("Canonicalize(%s) succeeded, want an error", lit)
		}
		if !errors.Is(err, ErrNumber) && !errors.Is(err, ErrNumberOverflow) {
			t.Errorf("Canonicalize(%s) = %v, want ErrNumber or ErrNumberOverflow", lit, err)
		}
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
