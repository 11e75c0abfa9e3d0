package core

import (
	"unicode/utf8"
)

// Scope names one record: the same idempotency key under another tenant,
// principal or use case is an unrelated record. The URL path is deliberately
// not part of it, so that a path version change keeps the meaning of a key.
type Scope struct {
	Tenant    string // may be empty when the deployment has no tenants
	Principal string // the authenticated caller
	UseCase   string // the operation, e.g. "payments.create"
	Key       string // the client's Idempotency-Key
}

const (
	// KeyBytesMin is the shortest key accepted: shorter keys are guessable or
	// not generated at random (a UUID has 36 bytes).
	KeyBytesMin = 16
	// KeyBytesMax is the most any policy may allow for KeyBytesMax.
	KeyBytesMax = 255
	// ScopePartBytesMax bounds tenant, principal and use case.
	ScopePartBytesMax = 255
)

// ValidateKey checks an idempotency key: 16 to keyBytesMax (at most 255)
// bytes of printable ASCII (0x20 to 0x7E), with no space at either end:
// header parsing trims those, so two clients' keys that differ only there
// would meet in one record. It names the first offending byte.
func ValidateKey(key string, keyBytesMax int) error {
	switch {
	case key == "":
		return refuse(ErrInvalidKey, "empty, want %d..%d bytes", KeyBytesMin, keyBytesMax)
	case len(key) < KeyBytesMin || len(key) > keyBytesMax:
		return refuse(ErrInvalidKey, "%d bytes, want %d..%d", len(key), KeyBytesMin, keyBytesMax)
	case key[0] == ' ' || key[len(key)-1] == ' ':
		return refuse(ErrInvalidKey, "a space at its start or end (keys made of spaces included)")
	}
	if printable(key) {
		return nil
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			kind := "control character"
			if c >= 0x80 {
				kind = "non-ASCII byte"
			}
			return refuse(ErrInvalidKey, "%s 0x%02x at byte %d", kind, c, i)
		}
	}
	return nil
}

// Validate checks every part of the scope; keyBytesMax is the policy's limit.
func (s Scope) Validate(keyBytesMax int) error {
	// Every request's scope comes through here, and almost every scope is
	// printable ASCII within its limits: one test of the three parts first,
	// the part-by-part checks (which name what is wrong) only when it fails.
	// The key's rules stay in ValidateKey alone.
	if s.Principal != "" && s.UseCase != "" &&
		len(s.Tenant) <= ScopePartBytesMax && len(s.Principal) <= ScopePartBytesMax && len(s.UseCase) <= ScopePartBytesMax &&
		printable(s.UseCase) && printable(s.Principal) && printable(s.Tenant) {
		return ValidateKey(s.Key, keyBytesMax)
	}
	return s.validateParts(keyBytesMax)
}

// validateParts is Validate part by part, naming the first part at fault.
// Validate's shortcut must accept nothing that this refuses (a property
// test holds them to the same answers).
func (s Scope) validateParts(keyBytesMax int) error {
	if err := validatePart("tenant", s.Tenant, true); err != nil {
		return err
	}
	if err := validatePart("principal", s.Principal, false); err != nil {
		return err
	}
	if err := validatePart("use case", s.UseCase, false); err != nil {
		return err
	}
	return ValidateKey(s.Key, keyBytesMax)
}

func validatePart(name, v string, emptyOK bool) error {
	if v == "" {
		if emptyOK {
			return nil
		}
		return refuse(ErrInvalidScope, "%s is empty", name)
	}
	if len(v) > ScopePartBytesMax {
		return refuse(ErrInvalidScope, "%s has %d bytes, want at most %d", name, len(v), ScopePartBytesMax)
	}
	if printable(v) { // most parts are printable ASCII throughout
		return nil
	}
	for i := 0; i < len(v); {
		if c := v[i]; c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(v[i:])
		if r == utf8.RuneError && size == 1 {
			return refuse(ErrInvalidScope, "%s has invalid UTF-8 at byte %d", name, i)
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return refuse(ErrInvalidScope, "%s has control character U+%04X at byte %d", name, r, i)
		}
		i += size
	}
	return nil
}

// String is "tenant/principal/use case/key", with "-" for an empty tenant.
// It is for logs and golden files, not a storage key: parts may contain "/".
func (s Scope) String() string {
	t := s.Tenant
	if t == "" {
		t = "-"
	}
	return t + "/" + s.Principal + "/" + s.UseCase + "/" + s.Key
}

// printable reports whether every byte of s is printable ASCII, 0x20 to
// 0x7E, eight bytes at a time: every request's scope goes through it, and a
// byte at a time it was a fifth of a replay's cost in the executor.
func printable(s string) bool {
	n := len(s)
	switch {
	case n >= 8:
		for i := 0; i+8 <= n; i += 8 {
			if !printableWord(load8(s[i:])) {
				return false
			}
		}
		return printableWord(load8(s[n-8:])) // the tail, overlapping the last word
	case n >= 4:
		// Two overlapping halves cover every byte of 4 to 7.
		return printableWord(load4(s) | load4(s[n-4:])<<32)
	case n > 0:
		// The first, middle and last bytes cover every byte of 1 to 3;
		// the word's other bytes are a printable 'A'.
		return printableWord(uint64(s[0]) | uint64(s[n>>1])<<8 | uint64(s[n-1])<<16 | 0x4141414141<<24)
	}
	return true
}

// printableWord reports whether every byte of x is 0x20 to 0x7E.
func printableWord(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (x - ones*0x20) &^ x & highs         // some byte < 0x20
	above := ((x + ones*(0x7f-0x7e)) | x) & highs // some byte > 0x7e
	return below|above == 0
}

// load8 and load4 read s's first 8 and 4 bytes little-endian (one load each
// once compiled): of a scope's strings, and of a fingerprint's bytes.
func load8[T string | []byte](s T) uint64 {
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func load4(s string) uint64 {
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
}
