package fingerprint

// Strings: validation (UTF-8, escapes, surrogates) and the canonical form
// (RFC 8785 section 3.2.2.2).

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// strPlain[c] is true for bytes that a string copies as they are: printable
// ASCII other than '"' and '\'.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str parses the string at s.pos and appends its canonical form to dst. It
// reports whether the input used escapes.
func (s *state) str(dst []byte) ([]byte, bool, error) {
	in := s.in
	open := s.pos
	i := open + 1
	dst = append(dst, '"')
	escaped := false
	for {
		start := i
		for i < len(in) {
			c := in[i]
			if strPlain[c] {
				i++
				continue
			}
			if c < 0x80 {
				break
			}
			size := validRune(in[i:])
			if size == 0 {
				return dst, false, s.badUTF8(i)
			}
			i += size
		}
		dst = append(dst, in[start:i]...)
		if i >= len(in) {
			return dst, false, newError(ErrSyntax, open, "unterminated string")
		}
		switch c := in[i]; {
		case c == '"':
			s.pos = i + 1
			return append(dst, '"'), escaped, nil
		case c == '\\':
			escaped = true
			r, size, err := s.escape(i)
			if err != nil {
				return dst, false, err
			}
			dst = appendRune(dst, r)
			i += size
		default:
			return dst, false, newError(ErrSyntax, i, "control character U+00"+hex2(c)+" in a string must be escaped")
		}
	}
}

// validRune returns the length of the valid UTF-8 sequence at the start of
// b, or 0 if it is not valid (which includes encoded surrogates).
func validRune(b []byte) int {
	c := b[0]
	if c >= 0xC2 && c <= 0xDF {
		if len(b) >= 2 && b[1]&0xC0 == 0x80 {
			return 2
		}
		return 0
	}
	r, size := utf8.DecodeRune(b)
	if r == utf8.RuneError && size <= 1 {
		return 0
	}
	return size
}

func (s *state) badUTF8(i int) error {
	b := s.in[i:]
	if len(b) >= 3 && b[0] == 0xED && b[1] >= 0xA0 && b[1] <= 0xBF && b[2]&0xC0 == 0x80 {
		r := rune(b[0]&0x0F)<<12 | rune(b[1]&0x3F)<<6 | rune(b[2]&0x3F)
		return newError(ErrInvalidUTF8, i, "surrogate U+"+strings.ToUpper(strconv.FormatInt(int64(r), 16))+" encoded in UTF-8 (a lone or CESU-8 surrogate)")
	}
	return newError(ErrInvalidUTF8, i, "invalid UTF-8 sequence starting with "+quoteByte(b[0]))
}

const hexDigits = "0123456789abcdef"

func hex2(c byte) string { return string([]byte{hexDigits[c>>4], hexDigits[c&0xF]}) }

// appendRune appends r in canonical string form (RFC 8785 section 3.2.2.2).
func appendRune(dst []byte, r rune) []byte {
	switch {
	case r == '"':
		return append(dst, '\\', '"')
	case r == '\\':
		return append(dst, '\\', '\\')
	case r < 0x20:
		switch r {
		case '\b':
			return append(dst, '\\', 'b')
		case '\t':
			return append(dst, '\\', 't')
		case '\n':
			return append(dst, '\\', 'n')
		case '\f':
			return append(dst, '\\', 'f')
		case '\r':
			return append(dst, '\\', 'r')
		}
		return append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
	case r < utf8.RuneSelf:
		return append(dst, byte(r))
	}
	return utf8.AppendRune(dst, r)
}

// escape decodes the escape sequence at in[i] == '\\'. It returns the rune and
// the length of the sequence (12 for a surrogate pair).
func (s *state) escape(i int) (rune, int, error) {
	in := s.in
	if i+1 >= len(in) {
		return 0, 0, newError(ErrSyntax, i, "unterminated escape sequence")
	}
	switch in[i+1] {
	case '"':
		return '"', 2, nil
	case '\\':
		return '\\', 2, nil
	case '/':
		return '/', 2, nil
	case 'b':
		return '\b', 2, nil
	case 'f':
		return '\f', 2, nil
	case 'n':
		return '\n', 2, nil
	case 'r':
		return '\r', 2, nil
	case 't':
		return '\t', 2, nil
	case 'u':
	default:
		return 0, 0, newError(ErrSyntax, i, "invalid escape sequence: backslash followed by "+quoteByte(in[i+1]))
	}
	r, ok := hex4(in[i+2:])
	if !ok {
		return 0, 0, newError(ErrSyntax, i, "\\u must be followed by four hexadecimal digits")
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, 0, newError(ErrSurrogate, i, "lone low surrogate \\u"+strconv.FormatInt(int64(r), 16)+" (not preceded by a high surrogate)")
	case r >= 0xD800 && r <= 0xDBFF:
		if i+7 >= len(in) || in[i+6] != '\\' || in[i+7] != 'u' {
			return 0, 0, newError(ErrSurrogate, i, "lone high surrogate \\u"+strconv.FormatInt(int64(r), 16)+" (not followed by a low surrogate)")
		}
		lo, ok := hex4(in[i+8:])
		if !ok {
			return 0, 0, newError(ErrSyntax, i+6, "\\u must be followed by four hexadecimal digits")
		}
		if lo < 0xDC00 || lo > 0xDFFF {
			return 0, 0, newError(ErrSurrogate, i, "high surrogate \\u"+strconv.FormatInt(int64(r), 16)+" followed by \\u"+strconv.FormatInt(int64(0x10000|lo), 16)[1:]+", not by a low surrogate")
		}
		return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 12, nil
	}
	return r, 6, nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unescape appends the value of the string body b (between the quotes,
// already validated) to dst, decoding escapes.
func unescape(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch b[i+1] {
		case 'u':
			r, _ := hex4(b[i+2:])
			i += 6
			if r >= 0xD800 && r <= 0xDBFF {
				lo, _ := hex4(b[i+2:])
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
			continue
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default: // '"', '\\', '/'
			c = b[i+1]
		}
		dst = append(dst, c)
		i += 2
	}
	return dst
}
