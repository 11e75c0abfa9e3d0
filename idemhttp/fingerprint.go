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
const TargetDomainTag = "idem/http/target/v1"

// isJSON reports whether the Content-Type names JSON: application/json or a
// +json structured syntax suffix (RFC 6839), any parameters aside. It does
// not allocate: it runs on every protected request.
func isJSON(contentType string) bool {
	mt := contentType
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	mt = strings.TrimSpace(mt)
	const app, suffix = "application/json", "+json"
	return strings.EqualFold(mt, app) ||
		(len(mt) > len(suffix) && strings.EqualFold(mt[len(mt)-len(suffix):], suffix))
}

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
//	SHA-256( field(TargetDomainTag) field(body fingerprint) field(method) field(target) )
//
// On a route with path patterns, POST /accounts/a/payments and POST
// /accounts/b/payments with one key and one body are two requests: the
// second is answered 422, never with the first's stored response.
func requestFingerprint(body idem.Fingerprint, method, target string) idem.Fingerprint {
	var buf [256]byte // the pre-image of a usual target fits: hashed without allocating
	b := appendField(buf[:0], TargetDomainTag)
	b = appendField(b, body[:])
	b = appendField(b, method)
	b = appendField(b, target)
	return sha256.Sum256(b)
}

// appendField appends field(f): its length as a big-endian uint64, then f.
func appendField[T ~string | ~[]byte](b []byte, f T) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(f)))
	return append(b, f...)
}
