package idemhttp

import (
	"errors"
	"fmt"
	"net/http"
)

// errKeyMissing and errKeyRepeated are the key header's own faults; a key
// that is present but out of the core's rules gets core.ValidateKey's error.
var (
	errKeyMissing  = errors.New("the idempotency key header is missing")
	errKeyRepeated = errors.New("the idempotency key header is sent more than once")
)

// keyOf reads the key from header name of h. The IETF draft makes the field
// a Structured Field Item whose value is a String (RFC 9651):
// Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324". Clients of older
// APIs send it bare, so a value that does not start with a quote is taken
// as it is. Parameters after a quoted string (;a=1) are allowed by the
// Item grammar and ignored. Two fields, or a list, are refused rather than
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
	if v == "" {
		return "", true, errKeyMissing
	}
	if v[0] != '"' {
		return v, true, nil
	}
	key, err = parseSFString(v)
	return key, true, err
}

// parseSFString parses an RFC 9651 sf-string at the start of v, then
// optional parameters. Escapes are only \" and \\; every other byte must be
// printable ASCII.
func parseSFString(v string) (string, error) {
	var out []byte // nil until the first escape: the common key is not copied
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			if i+1 >= len(v) || (v[i+1] != '"' && v[i+1] != '\\') {
				return "", fmt.Errorf("the key's quoted string has an invalid escape at byte %d", i)
			}
			if out == nil {
				out = append(make([]byte, 0, len(v)), v[1:i]...)
			}
			out = append(out, v[i+1])
			i++
		case c == '"':
			if rest := v[i+1:]; rest != "" && rest[0] != ';' {
				return "", fmt.Errorf("the key's quoted string is followed by %q, want parameters (;name=value) or nothing", rest)
			}
			if out == nil {
				return v[1:i], nil
			}
			return string(out), nil
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("the key's quoted string has byte 0x%02x at byte %d, want printable ASCII", c, i)
		case out != nil:
			out = append(out, c)
		}
	}
	return "", errors.New("the key's quoted string has no closing quote")
}
