package fingerprint

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

const (
	// BytesMaxDefault is the input size limit when none is set: 1 MiB.
	BytesMaxDefault = 1 << 20
	// DepthMaxDefault is the nesting limit when none is set. `[]` and `{}`
	// have depth 1; a scalar has depth 0.
	DepthMaxDefault = 128
	// DepthMax is the largest nesting limit that can be set: the parser
	// recurses once per level, and this bounds its stack.
	DepthMax = 10000
)

// Canonicalizer converts strict I-JSON to RFC 8785 canonical form within
// limits. The zero value uses the defaults. A Canonicalizer is a plain value:
// it is safe for concurrent use and costs nothing to copy.
type Canonicalizer struct {
	// BytesMax bounds the input length: 0 means BytesMaxDefault, a negative
	// value means no limit.
	BytesMax int
	// DepthMax bounds the nesting of arrays and objects: 0 or less means
	// DepthMaxDefault; above DepthMax it is DepthMax.
	DepthMax int
}

func (c Canonicalizer) limits() (bytesMax, depthMax int) {
	bytesMax, depthMax = c.BytesMax, c.DepthMax
	if bytesMax == 0 {
		bytesMax = BytesMaxDefault
	}
	if depthMax <= 0 {
		depthMax = DepthMaxDefault
	}
	if depthMax > DepthMax {
		depthMax = DepthMax
	}
	return bytesMax, depthMax
}

// Canonicalize returns the RFC 8785 canonical form of the JSON text in,
// with the default limits. It rejects input that is not strict I-JSON with
// an *Error; see the package documentation for the rules.
func Canonicalize(in []byte) ([]byte, error) { return Canonicalizer{}.Canonicalize(in) }

// AppendCanonical appends the RFC 8785 canonical form of in to dst, with the
// default limits. With a dst of sufficient capacity it does not allocate. On
// error it returns dst unchanged.
func AppendCanonical(dst, in []byte) ([]byte, error) {
	return Canonicalizer{}.AppendCanonical(dst, in)
}

// Canonicalize is the package-level Canonicalize with c's limits.
func (c Canonicalizer) Canonicalize(in []byte) ([]byte, error) {
	out, err := c.AppendCanonical(make([]byte, 0, len(in)), in)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AppendCanonical is the package-level AppendCanonical with c's limits.
func (c Canonicalizer) AppendCanonical(dst, in []byte) ([]byte, error) {
	bytesMax, depthMax := c.limits()
	s := getState()
	s.precise, s.strict = false, false // RFC 8785 rounding, always
	out, err := s.run(dst, in, bytesMax, depthMax, nil)
	putState(s)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// state is the reusable scratch of one canonicalization. It is pooled so that
// a call with a reused output buffer does not allocate.
type state struct {
	in       []byte
	pos      int
	out      []byte
	depthMax int

	members []member // members of the objects being parsed, innermost last
	names   []byte   // unescaped member names that had escapes
	tmp     []byte   // copy of an object's members while they are reordered

	// Used by Spec.Of only.
	precise bool   // apply the precision rule to the number being parsed
	strict  bool   // the Spec's precision rule is on (for included values)
	seg     []byte // canonical copies of included values
	spans   []span // per included pointer: where its value is in seg
	buf     []byte // the fingerprint's pre-image, or the whole canonical body
}

// member is one member of an object being parsed.
type member struct {
	// The unescaped name, for sorting and duplicate checks: in[name:nameEnd],
	// or names[^name:nameEnd] if name < 0 (the name had escapes). Offsets,
	// not a slice, keep member free of pointers and so of write barriers.
	name, nameEnd int
	off           int // input offset of the name's opening quote
	start, end    int // `"name":value` in out; start < 0 if excluded
}

func (s *state) nameOf(m *member) []byte {
	if m.name < 0 {
		return s.names[^m.name:m.nameEnd]
	}
	return s.in[m.name:m.nameEnd]
}

type span struct{ start, end int } // start < 0: absent

var statePool = sync.Pool{New: func() any { return new(state) }}

func getState() *state { return statePool.Get().(*state) }

// pooledBytesMax bounds the scratch a pooled state keeps, so that one huge input
// does not pin its memory for ever.
const pooledBytesMax = 1 << 20

func putState(s *state) {
	s.in, s.out = nil, nil
	s.members = s.members[:0]
	if cap(s.names) > pooledBytesMax {
		s.names = nil
	}
	if cap(s.tmp) > pooledBytesMax {
		s.tmp = nil
	}
	if cap(s.seg) > pooledBytesMax {
		s.seg = nil
	}
	if cap(s.buf) > pooledBytesMax {
		s.buf = nil
	}
	statePool.Put(s)
}

// run appends the canonical form of in to dst. root selects included and
// excluded values (nil: none).
func (s *state) run(dst, in []byte, bytesMax, depthMax int, root *node) ([]byte, error) {
	if bytesMax >= 0 && len(in) > bytesMax {
		return nil, newError(ErrTooLarge, bytesMax, strconv.Itoa(len(in))+" bytes, the limit is "+strconv.Itoa(bytesMax))
	}
	if len(in) >= 3 && in[0] == 0xEF && in[1] == 0xBB && in[2] == 0xBF {
		return nil, newError(ErrBOM, 0, "input starts with a UTF-8 byte-order mark")
	}
	s.in, s.pos, s.out, s.depthMax = in, 0, dst, depthMax
	s.names = s.names[:0]
	s.skipWS()
	if err := s.sub(0, root); err != nil {
		return nil, err
	}
	s.skipWS()
	if s.pos < len(in) {
		return nil, newError(ErrTrailingData, s.pos, quoteByte(in[s.pos])+" after the top-level value")
	}
	return s.out, nil
}

func (s *state) skipWS() {
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ' ', '\n', '\r', '\t':
			s.pos++
		default:
			return
		}
	}
}

func (s *state) errEOF(want string) error {
	return newError(ErrSyntax, s.pos, "unexpected end of input, expected "+want)
}

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
	emitted := 0
	for {
		if s.pos >= len(s.in) {
			return s.errEOF("a member name")
		}
		if s.in[s.pos] != '"' {
			return newError(ErrSyntax, s.pos, "invalid character "+quoteByte(s.in[s.pos])+" where a member name was expected")
		}
		nameOff := s.pos
		mark := len(s.out)
		if emitted > 0 {
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
			at := len(s.names)
			s.names = unescape(s.names, name)
			name = s.names[at:]
			nameStart, nameEnd = ^at, len(s.names)
		}
		s.skipWS()
		if s.pos >= len(s.in) {
			return s.errEOF("':'")
		}
		if s.in[s.pos] != ':' {
			return newError(ErrSyntax, s.pos, "invalid character "+quoteByte(s.in[s.pos])+" after a member name, expected ':'")
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
			emitted++
		}
		if err != nil {
			return err
		}
		s.members = append(s.members, member{name: nameStart, nameEnd: nameEnd, off: nameOff, start: start, end: len(s.out)})
		s.skipWS()
		if s.pos >= len(s.in) {
			return s.errEOF("',' or '}'")
		}
		c := s.in[s.pos]
		if c == ',' {
			s.pos++
			s.skipWS()
			continue
		}
		if c != '}' {
			return newError(ErrSyntax, s.pos, "invalid character "+quoteByte(c)+" after an object member, expected ',' or '}'")
		}
		s.pos++
		break
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
