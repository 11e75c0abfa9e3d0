package idemhttp

import (
	"errors"
	"strings"

	"github.com/idemkit/idem"
)

// storedFingerprinter is what the executor's ErrKeyMisuse may carry as its
// cause: the fingerprint the key's record holds. With it, a 422 says which
// parts of the request differ from the one the key was first used for.
type storedFingerprinter interface {
	StoredFingerprint() idem.Fingerprint
}

// misuseDetailUnknown is the 422's detail when the parts that differ
// cannot be told: it names every part that counts.
const misuseDetailUnknown = "this key was already used for another request (its method, path, query or body differ): use a new key for a new request"

// describeMismatch is the detail of a 422 for the request of fingerprint
// fp: the parts in which it differs from the stored request, when the
// error carries the stored fingerprint and both have part tags.
func describeMismatch(e *idem.Error, fp idem.Fingerprint) string {
	var stored storedFingerprinter
	if !errors.As(e, &stored) {
		return misuseDetailUnknown
	}
	parts := differingParts(stored.StoredFingerprint(), fp)
	if len(parts) == 0 {
		return misuseDetailUnknown
	}
	verb := " differs"
	if len(parts) > 1 {
		verb = " differ"
	}
	return "this key was already used for another request (its " + joinParts(parts) + verb + "): use a new key for a new request"
}

// differingParts names the parts in which the requests of fingerprints a
// and b certainly differ: those whose tags differ (equal parts have equal
// tags). None if either has another layout, or if every tag agrees (parts
// may still differ: a tag is one byte).
func differingParts(a, b idem.Fingerprint) []string {
	if a[layoutByte] != targetLayout || b[layoutByte] != targetLayout {
		return nil
	}
	var parts []string
	for i, name := range partNames {
		if a[tagsStart+i] != b[tagsStart+i] {
			parts = append(parts, name)
		}
	}
	return parts
}

// joinParts is "a", "a and b", or "a, b and c".
func joinParts(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
