package idemhttp

import (
	"crypto/sha256"
	"encoding/binary"
	"mime"
	"strings"

	"github.com/idemkit/idem"
)

// RawDomainTag starts the pre-image of the fingerprint of a body that is not
// JSON. It differs from fingerprint.DomainTag, so a raw body and a JSON body
// never share a pre-image, whatever their bytes.
const RawDomainTag = "idem/http/raw/v1"

// TargetDomainTag starts the pre-image of a request's fingerprint: its
// body's fingerprint (JSON or raw) bound to its method and request target.
// v2 is the layout with part tags (requestFingerprint).
const TargetDomainTag = "idem/http/target/v2"

// mediaTypeOf is the Content-Type in one spelling for the raw fingerprint:
// type and parameter names lower-cased, parameters sorted (what
// mime.FormatMediaType writes), so that "Text/Plain; charset=utf-8" and
// "text/plain;charset=utf-8" are the same request. A value that does not
// parse is kept as sent: it still tells the request apart from others.
func mediaTypeOf(contentType string) string {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return contentType
	}
	if s := mime.FormatMediaType(mt, params); s != "" {
		return s
	}
	return contentType
}

// rawFingerprint hashes a body that is not JSON:
//
//	SHA-256( field(RawDomainTag) field(use case) field(media type) field(body) )
//	field(b) = uint64 big-endian len(b), then b
//
// Every part carries its length, so no two (use case, media type, body)
// share a pre-image (see package fingerprint for why a join would not do).
// The media type counts: the same bytes as text/csv and as
// application/octet-stream are different requests.
func rawFingerprint(useCase, mediaType string, body []byte) idem.Fingerprint {
	h := sha256.New()
	var n [8]byte
	for _, part := range [...][]byte{[]byte(RawDomainTag), []byte(useCase), []byte(mediaType), body} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	var fp idem.Fingerprint
	h.Sum(fp[:0])
	return fp
}

// requestFingerprint is what the executor compares for a request: its
// body's fingerprint (JSON or raw) bound to its method and its request
// target (path and query, as sent), fields as in rawFingerprint:
//
//	digest = SHA-256( field(TargetDomainTag) field(body fingerprint) field(method) field(target) )
//	fingerprint = digest[:27] || 0x02 || tag(method) tag(path) tag(query) tag(body fingerprint)
//
// On a route with path patterns, POST /accounts/a/payments and POST
// /accounts/b/payments with one key and one body are two requests: the
// second is answered 422, never with the first's stored response.
//
// The last five bytes say what a 422 can tell the client: a layout byte
// (targetLayout) and one byte of each part (partTag), so that two
// fingerprints of this layout whose tags differ come from requests that
// differ in those parts (describeMismatch). The 216 bits of the digest
// still tell every request from every other; the tags add no secret (each
// is a byte of the part the client sent).
func requestFingerprint(body idem.Fingerprint, method, target string) idem.Fingerprint {
	var buf [256]byte // the pre-image of a usual target fits: hashed without allocating
	b := appendField(buf[:0], TargetDomainTag)
	b = appendField(b, body[:])
	b = appendField(b, method)
	b = appendField(b, target)
	fp := idem.Fingerprint(sha256.Sum256(b))
	path, query := splitTarget(target)
	fp[layoutByte] = targetLayout
	fp[tagsStart+partMethod] = partTag(method)
	fp[tagsStart+partPath] = partTag(path)
	fp[tagsStart+partQuery] = partTag(query)
	fp[tagsStart+partBody] = partTag(body[:])
	return fp
}

// The request parts a fingerprint tags, in the order of their tags.
const (
	partMethod = iota
	partPath
	partQuery
	partBody
	partCount
)

// partNames are what a 422 calls the parts.
var partNames = [partCount]string{"method", "path", "query", "body"}

const (
	// targetLayout marks a fingerprint of requestFingerprint's layout: a
	// record of another layout (or of another writer) has no tags to compare.
	targetLayout = 0x02
	tagsStart    = len(idem.Fingerprint{}) - partCount
	layoutByte   = tagsStart - 1
)

// splitTarget is the path and the query (from its "?", so that "/p?" and
// "/p" differ) of a request target.
func splitTarget(target string) (path, query string) {
	if i := strings.IndexByte(target, '?'); i >= 0 {
		return target[:i], target[i:]
	}
	return target, ""
}

// partTag is one byte of a part: FNV-1a (32 bits), folded. Equal parts
// have equal tags; the tag need not resist a forger, since the digest is
// what tells requests apart.
func partTag[T ~string | ~[]byte](part T) byte {
	h := uint32(2166136261)
	for i := 0; i < len(part); i++ {
		h = (h ^ uint32(part[i])) * 16777619
	}
	return byte(h ^ h>>8 ^ h>>16 ^ h>>24)
}

// appendField appends field(f): its length as a big-endian uint64, then f.
func appendField[T ~string | ~[]byte](b []byte, f T) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(f)))
	return append(b, f...)
}
