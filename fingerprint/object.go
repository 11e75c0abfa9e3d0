package fingerprint

// Objects: reading the members, then sorting them by UTF-16 code units and
// rejecting duplicate names (RFC 8785 section 3.2.3).

import (
	"slices"
	"strconv"
)

// object parses the object at s.pos and appends its canonical form: the
// members sorted by name, the excluded ones left out.
func (s *state) object(depth int, n *node) error {
	if depth > s.depthMax {
		return newError(ErrTooDeep, s.pos, "nesting deeper than "+strconv.Itoa(s.depthMax))
	}
	s.pos++
	s.out = append(s.out, '{')
	body := len(s.out)
	s.skipWS()
	if s.pos < len(s.in) && s.in[s.pos] == '}' {
		s.pos++
		s.out = append(s.out, '}')
		return nil
	}
	base, namesMark := len(s.members), len(s.names)
	if err := s.readMembers(depth, n, body); err != nil {
		return err
	}
	err := s.order(s.members[base:], body)
	s.members = s.members[:base]
	s.names = s.names[:namesMark]
	if err != nil {
		return err
	}
	s.out = append(s.out, '}')
	return nil
}

// readMembers parses the members of a non-empty object, up to and including
// its '}'. It appends each `"name":value` to out, in input order from
// out[body], and records it in s.members; an excluded member is validated,
// then dropped from out. A member is read in the loop itself: a call per
// member cost about 2% on the benchmarks.
func (s *state) readMembers(depth int, n *node, body int) error {
	for {
		if s.pos >= len(s.in) {
			return s.errEOF("a member name")
		}
		if s.in[s.pos] != '"' {
			return newError(ErrSyntax, s.pos, "invalid character "+quoteByte(s.in[s.pos])+" where a member name was expected")
		}
		nameOff := s.pos
		mark := len(s.out)
		if mark > body { // a member before this one is in out
			s.out = append(s.out, ',')
		}
		start := len(s.out)
		var escaped bool
		var err error
		s.out, escaped, err = s.str(s.out)
		if err != nil {
			return err
		}
		nameStart, nameEnd := nameOff+1, s.pos-1
		name := s.in[nameStart:nameEnd]
		if escaped {
			name, nameStart, nameEnd = s.unescapeName(name)
		}
		s.skipWS()
		if s.pos >= len(s.in) || s.in[s.pos] != ':' {
			return s.noColon()
		}
		s.pos++
		s.out = append(s.out, ':')
		s.skipWS()
		var child *node
		if n != nil {
			child = n.lookupName(name)
		}
		if child != nil && child.exclude {
			err = s.skipped(depth, mark)
			start = -1
		} else {
			err = s.sub(depth, child)
		}
		if err != nil {
			return err
		}
		s.members = append(s.members, member{name: nameStart, nameEnd: nameEnd, off: nameOff, start: start, end: len(s.out)})
		s.skipWS()
		if s.pos >= len(s.in) {
			return s.errEOF("',' or '}'")
		}
		switch c := s.in[s.pos]; c {
		case ',':
			s.pos++
			s.skipWS()
		case '}':
			s.pos++
			return nil
		default:
			return newError(ErrSyntax, s.pos, "invalid character "+quoteByte(c)+" after an object member, expected ',' or '}'")
		}
	}
}

// noColon is the error for a member name that no ':' follows.
func (s *state) noColon() error {
	if s.pos >= len(s.in) {
		return s.errEOF("':'")
	}
	return newError(ErrSyntax, s.pos, "invalid character "+quoteByte(s.in[s.pos])+" after a member name, expected ':'")
}

// unescapeName copies the name, which has escapes, unescaped to s.names, for
// sorting and duplicate checks. It returns the copy and where it is, as
// member.name and member.nameEnd record it.
func (s *state) unescapeName(name []byte) (unescaped []byte, from, to int) {
	at := len(s.names)
	s.names = unescape(s.names, name)
	return s.names[at:], ^at, len(s.names)
}

// order sorts the members of the object whose members start at out[body],
// rejecting duplicate names, and rewrites them in order if they were not.
func (s *state) order(ms []member, body int) error {
	sorted := true
	for i := 1; i < len(ms); i++ {
		c := compareNames(s.nameOf(&ms[i-1]), s.nameOf(&ms[i]))
		if c == 0 {
			return s.duplicate(&ms[i-1], &ms[i])
		}
		if c > 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return nil
	}
	if len(ms) <= 12 {
		for i := 1; i < len(ms); i++ {
			for j := i; j > 0 && compareNames(s.nameOf(&ms[j-1]), s.nameOf(&ms[j])) > 0; j-- {
				ms[j-1], ms[j] = ms[j], ms[j-1]
			}
		}
	} else {
		slices.SortFunc(ms, func(a, b member) int { return compareNames(s.nameOf(&a), s.nameOf(&b)) })
	}
	for i := 1; i < len(ms); i++ {
		if string(s.nameOf(&ms[i-1])) == string(s.nameOf(&ms[i])) {
			return s.duplicate(&ms[i-1], &ms[i])
		}
	}
	s.tmp = append(s.tmp[:0], s.out[body:]...)
	out := s.out[:body]
	first := true
	for _, m := range ms {
		if m.start < 0 {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, s.tmp[m.start-body:m.end-body]...)
	}
	s.out = out
	return nil
}

func (s *state) duplicate(a, b *member) error {
	off := max(a.off, b.off)
	name := string(s.nameOf(a))
	if len(name) > 64 {
		name = name[:64] + "..."
	}
	return newError(ErrDuplicateName, off, "member name "+strconv.Quote(name)+" appears twice in one object (first at byte offset "+strconv.Itoa(min(a.off, b.off))+")")
}

// compareNames orders member names by their UTF-16 code units (RFC 8785
// section 3.2.3). For valid UTF-8 this is byte order except that a
// supplementary-plane character (4 bytes, lead F0..F4, a surrogate pair in
// UTF-16) sorts before U+E000..U+FFFF (3 bytes, lead EE or EF).
func compareNames(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	ca, cb := a[i], b[i]
	// Both are lead bytes here: equal prefixes end on the same boundary.
	if ca >= 0xEE && cb >= 0xEE && (ca >= 0xF0) != (cb >= 0xF0) {
		if ca >= 0xF0 {
			return -1
		}
		return 1
	}
	return int(ca) - int(cb)
}
