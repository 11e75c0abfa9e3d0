package core

// FingerprintBytes is the length of a Fingerprint: a SHA-256 digest.
const FingerprintBytes = 32

// Fingerprint identifies the semantic content of a request: the same
// fingerprint means "the same request" for the purpose of replay. Package
// fingerprint computes it; the core only compares it. The zero Fingerprint is
// "unset" and is refused by Reserve, because a SHA-256 digest of all zeros is
// never produced in practice while a forgotten field is.
type Fingerprint [FingerprintBytes]byte

// FingerprintFromBytes copies b into a Fingerprint. It returns an error, never
// a truncated or padded value, when b is not exactly FingerprintBytes long.
func FingerprintFromBytes(b []byte) (Fingerprint, error) {
	var f Fingerprint
	if len(b) != FingerprintBytes {
		return f, refuse(ErrFingerprintLength, "%d bytes, want %d", len(b), FingerprintBytes)
	}
	copy(f[:], b)
	return f, nil
}

// ParseFingerprint decodes the lowercase or uppercase hexadecimal form
// produced by Fingerprint.String.
func ParseFingerprint(s string) (Fingerprint, error) {
	var f Fingerprint
	if len(s) != 2*FingerprintBytes {
		return f, refuse(ErrFingerprintLength, "%d hex digits, want %d", len(s), 2*FingerprintBytes)
	}
	for i := range f {
		hi, lo := unhex(s[2*i]), unhex(s[2*i+1])
		if hi > 15 || lo > 15 {
			bad := 2 * i
			if hi <= 15 {
				bad++
			}
			return Fingerprint{}, refuse(ErrFingerprintLength, "%q at %d is not a hexadecimal digit", s[bad:bad+1], bad)
		}
		f[i] = hi<<4 | lo
	}
	return f, nil
}

// IsZero reports whether f is unset.
func (f Fingerprint) IsZero() bool {
	// Four words or'ed, not f == Fingerprint{}: that is a call to memequal,
	// and every reserve asks this three times.
	return load8(f[0:])|load8(f[8:])|load8(f[16:])|load8(f[24:]) == 0
}

// same reports whether f and g are equal, four words at a time: the
// reserve of every request compares them, and == on the arrays is a call.
func (f *Fingerprint) same(g *Fingerprint) bool {
	return (load8(f[0:])^load8(g[0:]))|(load8(f[8:])^load8(g[8:]))|(load8(f[16:])^load8(g[16:]))|(load8(f[24:])^load8(g[24:])) == 0
}

// String is the full lowercase hexadecimal digest.
func (f Fingerprint) String() string { return hexString(f[:]) }

// Short is the first 8 hexadecimal digits, for logs and golden files.
func (f Fingerprint) Short() string { return hexString(f[:4]) }

// hexString and unhex are encoding/hex's, which the core does without: it
// imports fmt (see format.go).
func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}

// unhex is the value of a hexadecimal digit, or 255.
func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 255
}
