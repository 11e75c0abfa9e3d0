package core

import (
	"encoding/hex"
	"fmt"
)

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
		return f, fmt.Errorf("%w: %d bytes, want %d", ErrFingerprintLength, len(b), FingerprintBytes)
	}
	copy(f[:], b)
	return f, nil
}

// ParseFingerprint decodes the lowercase or uppercase hexadecimal form
// produced by Fingerprint.String.
func ParseFingerprint(s string) (Fingerprint, error) {
	var f Fingerprint
	if len(s) != 2*FingerprintBytes {
		return f, fmt.Errorf("%w: %d hex digits, want %d", ErrFingerprintLength, len(s), 2*FingerprintBytes)
	}
	if _, err := hex.Decode(f[:], []byte(s)); err != nil {
		return Fingerprint{}, fmt.Errorf("%w: %v", ErrFingerprintLength, err)
	}
	return f, nil
}

// IsZero reports whether f is unset.
func (f Fingerprint) IsZero() bool { return f == Fingerprint{} }

// String is the full lowercase hexadecimal digest.
func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

// Short is the first 8 hexadecimal digits, for logs and golden files.
func (f Fingerprint) Short() string { return hex.EncodeToString(f[:4]) }
