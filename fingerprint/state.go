package fingerprint

// The parser's scratch, pooled across calls, and the top-level driver that
// runs it over one input.

import (
	"strconv"
	"sync"
)

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
