package idemhttp

import (
	"errors"
	"net/http"
	"strings"
)

// The key header's own faults; a key that is present but out of the core's
// rules gets core.ValidateKey's error.
var (
	errKeyMissing  = errors.New("the idempotency key header is missing")
	errKeyEmpty    = errors.New("the idempotency key header is empty")
	errKeyRepeated = errors.New("the idempotency key header is sent more than once")
)

// keyOf reads the key from header name of h. The IETF draft makes the field
// a Structured Field Item whose value is a String (RFC 9651):
// Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324". Clients of older
// APIs send it bare, so a value that does not start with a quote is taken
// as it is, but for a comma. Parameters after a quoted string (;a=1) are
// allowed by the Item grammar, checked (structured.go) and ignored. Two
// fields, or a list on one line (bare or quoted), are refused rather than
// one picked: two intermediaries could pick differently.
func keyOf(h http.Header, name string) (key string, present bool, err error) {
	vs := h.Values(name) // name is canonical: Values does no allocation for it
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", true, errKeyRepeated
	}
	v := vs[0] // net/http has trimmed the spaces and tabs around it
	switch {
	case v == "":
		return "", true, errKeyEmpty
	case v[0] == '"':
		key, err = parseKeyItem(v)
		return key, true, err
	case strings.IndexByte(v, ',') >= 0:
		return "", true, errKeyList
	}
	return v, true, nil
}
