package fingerprint

// Values: the dispatch on a value's first byte, included and excluded
// values, literals and arrays. Objects are in object.go, strings in
// string.go, numbers in number.go.

import "strconv"

// sub parses the value at s.pos, which the pointer-trie node n selects (nil:
// no pointer reaches it). An included value is also copied to seg.
func (s *state) sub(depth int, n *node) error {
	if n == nil || n.include < 0 {
		return s.value(depth, n)
	}
	saved := s.precise
	s.precise = s.strict
	start := len(s.out)
	err := s.value(depth, n)
	s.precise = saved
	if err != nil {
		return err
	}
	s.spans[n.include] = span{len(s.seg), len(s.seg) + len(s.out) - start}
	s.seg = append(s.seg, s.out[start:]...)
	return nil
}

// skipped parses a value that is excluded: it is validated but contributes
// nothing, so the precision rule does not apply to it.
func (s *state) skipped(depth, mark int) error {
	saved := s.precise
	s.precise = false
	err := s.value(depth, nil)
	s.precise = saved
	s.out = s.out[:mark]
	return err
}

func (s *state) value(depth int, n *node) error {
	if s.pos >= len(s.in) {
		return s.errEOF("a value")
	}
	switch c := s.in[s.pos]; c {
	case '{':
		return s.object(depth+1, n)
	case '[':
		return s.array(depth+1, n)
	case '"':
		var err error
		s.out, _, err = s.str(s.out)
		return err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return s.number()
		}
		return s.badValue(c)
	}
}

func (s *state) badValue(c byte) error {
	rest := s.in[s.pos:]
	switch {
	case c == '+':
		return newError(ErrNumber, s.pos, "a number may not start with '+'")
	case c == '.':
		return newError(ErrNumber, s.pos, "a number may not start with '.'")
	case hasPrefix(rest, "NaN"):
		return newError(ErrNumber, s.pos, "NaN is not a JSON number")
	case hasPrefix(rest, "Infinity"):
		return newError(ErrNumber, s.pos, "Infinity is not a JSON number")
	}
	return newError(ErrSyntax, s.pos, "invalid character "+quoteByte(c)+" where a value was expected")
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

func (s *state) literal(lit string) error {
	if !hasPrefix(s.in[s.pos:], lit) {
		return newError(ErrSyntax, s.pos, "invalid literal, expected "+lit)
	}
	s.pos += len(lit)
	if s.pos < len(s.in) && isWordByte(s.in[s.pos]) {
		return newError(ErrSyntax, s.pos, "invalid character "+quoteByte(s.in[s.pos])+" after "+lit)
	}
	s.out = append(s.out, lit...)
	return nil
}

// isWordByte reports bytes that may not directly follow a literal or number.
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '+' || c == '-' || c == '_' || c >= 0x80
}

func (s *state) array(depth int, n *node) error {
	if depth > s.depthMax {
		return newError(ErrTooDeep, s.pos, "nesting deeper than "+strconv.Itoa(s.depthMax))
	}
	s.pos++
	s.out = append(s.out, '[')
	s.skipWS()
	if s.pos < len(s.in) && s.in[s.pos] == ']' {
		s.pos++
		s.out = append(s.out, ']')
		return nil
	}
	emitted := 0
	for i := 0; ; i++ {
		var child *node
		if n != nil {
			child = n.lookupIndex(i)
		}
		mark := len(s.out)
		if emitted > 0 {
			s.out = append(s.out, ',')
		}
		var err error
		if child != nil && child.exclude {
			err = s.skipped(depth, mark)
		} else {
			err = s.sub(depth, child)
			emitted++
		}
		if err != nil {
			return err
		}
		s.skipWS()
		if s.pos >= len(s.in) {
			return s.errEOF("',' or ']'")
		}
		switch s.in[s.pos] {
		case ',':
			s.pos++
			s.skipWS()
		case ']':
			s.pos++
			s.out = append(s.out, ']')
			return nil
		default:
			return newError(ErrSyntax, s.pos, "invalid character "+quoteByte(s.in[s.pos])+" after an array element, expected ',' or ']'")
		}
	}
}
