package idemhttp

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// This file parses the key header's value as an RFC 9651 Structured Field
// Item (RFC 9651 obsoletes RFC 8941 and adds Dates and Display Strings):
// an sf-string, then parameters, then nothing. The parameters' values are
// checked and dropped: the key is the string alone. The parser is strict,
// since a value two parsers could read differently is two keys to two
// intermediaries.

// errKeyList is a value that holds more than one key: a list on one line is
// what an intermediary makes of two lines (RFC 9110 lets it join them with
// commas), so it is refused as two lines are.
var errKeyList = errors.New("the idempotency key header holds a list (a comma outside a quoted string): send one key")

// parseKeyItem parses v, which starts with a quote, as an Item whose bare
// item is a String, and returns the string.
func parseKeyItem(v string) (string, error) {
	key, rest, err := parseSFString(v)
	if err != nil {
		return "", err
	}
	if rest, err = skipParameters(rest); err != nil {
		return "", err
	}
	// Spaces after the item are dropped (RFC 9651 §4.2); net/http has
	// trimmed them off a received field, not off one a program set.
	switch trimmed := strings.TrimLeft(rest, " "); {
	case trimmed == "":
		return key, nil
	case trimmed[0] == ',':
		return "", errKeyList
	}
	return "", fmt.Errorf("the key's quoted string is followed by %q, want parameters (;key or ;key=value) or nothing", rest)
}

// parseSFString parses an sf-string at the start of v and returns it and
// what follows. Escapes are only \" and \\; every other byte must be
// printable ASCII.
func parseSFString(v string) (s, rest string, err error) {
	var out []byte // nil until the first escape: the common key is not copied
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			if i+1 >= len(v) || (v[i+1] != '"' && v[i+1] != '\\') {
				return "", "", fmt.Errorf("the key's quoted string has an invalid escape at byte %d", i)
			}
			if out == nil {
				out = append(make([]byte, 0, len(v)), v[1:i]...)
			}
			out = append(out, v[i+1])
			i++
		case c == '"':
			if out == nil {
				return v[1:i], v[i+1:], nil
			}
			return string(out), v[i+1:], nil
		case c < 0x20 || c > 0x7e:
			return "", "", fmt.Errorf("the key's quoted string has byte 0x%02x at byte %d, want printable ASCII", c, i)
		case out != nil:
			out = append(out, c)
		}
	}
	return "", "", errors.New("the key's quoted string has no closing quote")
}

// skipParameters skips the parameters at the start of s:
// *( ";" *SP key [ "=" bare-item ] ), and returns what follows them.
func skipParameters(s string) (string, error) {
	for s != "" && s[0] == ';' {
		s = strings.TrimLeft(s[1:], " ")
		n := keyLen(s)
		if n == 0 {
			return "", fmt.Errorf("the key's parameter %q does not start with a key (a lowercase letter or *, then lowercase letters, digits, _ - . *)", s)
		}
		name := s[:n]
		if s = s[n:]; s == "" || s[0] != '=' {
			continue // a parameter without a value is true
		}
		var err error
		if s, err = skipBareItem(s[1:]); err != nil {
			return "", fmt.Errorf("the key's parameter %s: %w", name, err)
		}
	}
	return s, nil
}

// keyLen is the length of the parameter key at the start of s, 0 if none:
// ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" ).
func keyLen(s string) int {
	if s == "" || !(isLower(s[0]) || s[0] == '*') {
		return 0
	}
	n := 1
	for n < len(s) && (isLower(s[n]) || isDigit(s[n]) || strings.IndexByte("_-.*", s[n]) >= 0) {
		n++
	}
	return n
}

// skipBareItem skips the bare item at the start of s and returns what
// follows it.
func skipBareItem(s string) (string, error) {
	if s == "" {
		return "", errors.New("no value after =")
	}
	switch c := s[0]; {
	case c == '-' || isDigit(c):
		rest, _, err := skipNumber(s)
		return rest, err
	case c == '"':
		_, rest, err := parseSFString(s)
		return rest, err
	case c == '*' || isAlpha(c):
		return skipToken(s), nil
	case c == ':':
		return skipByteSequence(s)
	case c == '?':
		if len(s) < 2 || (s[1] != '0' && s[1] != '1') {
			return "", fmt.Errorf("%q is not a boolean (?0 or ?1)", s)
		}
		return s[2:], nil
	case c == '@':
		rest, decimal, err := skipNumber(s[1:])
		if err == nil && decimal {
			err = errors.New("a decimal")
		}
		if err != nil {
			return "", fmt.Errorf("%q is not a date (@ and an integer): %w", s, err)
		}
		return rest, nil
	case c == '%':
		return skipDisplayString(s)
	}
	return "", fmt.Errorf("%q is not a structured field value", s)
}

// skipNumber skips an sf-integer or sf-decimal: an optional minus, at most
// 15 digits, or at most 12 digits, a dot and 1 to 3 digits.
func skipNumber(s string) (rest string, decimal bool, err error) {
	i := 0
	if s != "" && s[0] == '-' {
		i++
	}
	start, dot := i, -1
digits:
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case isDigit(c):
		case c == '.' && dot < 0:
			if i-start > 12 {
				return "", false, fmt.Errorf("%q is not a decimal: more than 12 digits before the dot", s)
			}
			dot = i
		default:
			break digits
		}
		if dot < 0 && i+1-start > 15 {
			return "", false, fmt.Errorf("%q is not an integer: more than 15 digits", s)
		}
	}
	switch {
	case i == start:
		return "", false, fmt.Errorf("%q is not an integer: no digits", s)
	case dot < 0:
		return s[i:], false, nil
	case dot == i-1 || i-dot-1 > 3:
		return "", false, fmt.Errorf("%q is not a decimal: want 1 to 3 digits after the dot", s)
	}
	return s[i:], true, nil
}

// skipToken skips an sf-token: ( ALPHA / "*" ) *( tchar / ":" / "/" ).
func skipToken(s string) string {
	i := 1
	for i < len(s) && (isTchar(s[i]) || s[i] == ':' || s[i] == '/') {
		i++
	}
	return s[i:]
}

// skipByteSequence skips an sf-binary: base64 between colons, which must
// decode (padding may be left out).
func skipByteSequence(s string) (string, error) {
	end := strings.IndexByte(s[1:], ':')
	if end < 0 {
		return "", fmt.Errorf("%q is not a byte sequence: no closing colon", s)
	}
	content := s[1 : 1+end]
	for i := 0; i < len(content); i++ {
		if c := content[i]; !isAlpha(c) && !isDigit(c) && c != '+' && c != '/' && c != '=' {
			return "", fmt.Errorf("%q is not a byte sequence: byte %q is not base64", s, c)
		}
	}
	if _, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(content, "=")); err != nil {
		return "", fmt.Errorf("%q is not a byte sequence: %v", s, err)
	}
	return s[2+end:], nil
}

// skipDisplayString skips an sf-displaystring: %" then printable ASCII,
// with % and two lowercase hex digits for any other byte, then ", whose
// bytes are UTF-8.
func skipDisplayString(s string) (string, error) {
	if len(s) < 2 || s[1] != '"' {
		return "", fmt.Errorf("%q is not a display string: want %%\" to open it", s)
	}
	var decoded []byte
	for i := 2; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			if !utf8.Valid(decoded) {
				return "", fmt.Errorf("%q is not a display string: not UTF-8", s)
			}
			return s[i+1:], nil
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("%q is not a display string: byte 0x%02x", s, c)
		case c == '%':
			if i+2 >= len(s) || !isLowerHex(s[i+1]) || !isLowerHex(s[i+2]) {
				return "", fmt.Errorf("%q is not a display string: want %% and two lowercase hex digits", s)
			}
			decoded = append(decoded, hexValue(s[i+1])<<4|hexValue(s[i+2]))
			i += 2
		default:
			decoded = append(decoded, c)
		}
	}
	return "", fmt.Errorf("%q is not a display string: no closing quote", s)
}

func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isLower(c byte) bool    { return 'a' <= c && c <= 'z' }
func isAlpha(c byte) bool    { return isLower(c) || ('A' <= c && c <= 'Z') }
func isLowerHex(c byte) bool { return isDigit(c) || ('a' <= c && c <= 'f') }

func hexValue(c byte) byte {
	if isDigit(c) {
		return c - '0'
	}
	return c - 'a' + 10
}

// isTchar reports whether c is an RFC 9110 tchar.
func isTchar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
