package fingerprint

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	"github.com/idemkit/idem/core"
)

// DomainTag opens every pre-image, so that a fingerprint can never equal a
// SHA-256 computed for another purpose over the same bytes. A change to the
// encoding gets a new tag.
const DomainTag = "idem/fingerprint/v1"

// Modes of the pre-image, after the schema version.
const (
	modeDocument = 'D' // the canonical body, less the excluded values
	modeInclude  = 'I' // the included values, one entry per pointer
)

// Option configures a Spec.
type Option func(*config)

type config struct {
	include, exclude []string
	includeSet       bool
	requireIncluded  bool
	allowImprecise   bool
	limits           Canonicalizer
}

// Include makes only the values at these JSON Pointers (RFC 6901) count, in
// this order. A pointer that selects nothing is encoded as absent, which
// differs from every present value, null included; see RequireIncluded.
// Repeated calls add pointers.
func Include(pointers ...string) Option {
	return func(c *config) {
		c.include = append(c.include, pointers...)
		c.includeSet = true
	}
}

// Exclude removes the values at these JSON Pointers before the body is
// canonicalized, so that they never change the fingerprint, present or
// absent. An excluded array element is removed from its array. Repeated calls
// add pointers.
func Exclude(pointers ...string) Option {
	return func(c *config) { c.exclude = append(c.exclude, pointers...) }
}

// RequireIncluded makes an included pointer that selects nothing an error
// (ErrPointer) instead of an absent entry.
func RequireIncluded() Option { return func(c *config) { c.requireIncluded = true } }

// AllowImpreciseNumbers turns off the precision rule: numbers that a double
// cannot carry exactly (integers beyond ±(2^53-1), literals with more
// significant digits than a double keeps) are accepted and rounded as RFC
// 8785 says, so that distinct literals may share a fingerprint.
func AllowImpreciseNumbers() Option { return func(c *config) { c.allowImprecise = true } }

// WithLimits sets the input size and nesting limits (default: the zero
// Canonicalizer's).
func WithLimits(l Canonicalizer) Option { return func(c *config) { c.limits = l } }

// Spec is a compiled fingerprint definition: a use case, a fingerprint schema
// version and a field selection. It is immutable and safe for concurrent
// use; build it once and call Of for every request.
type Spec struct {
	header   []byte // the pre-image up to and including the mode byte
	include  []string
	root     *node // nil when no pointer is given
	strict   bool
	require  bool
	bytesMax int
	depthMax int
}

// NewSpec compiles a fingerprint definition. useCase and schemaVersion are
// hashed into every fingerprint: bump the version whenever the meaning of a
// request or the selection changes, so that old and new fingerprints never
// compare equal by accident. It returns an *Error of kind ErrPointer for a
// malformed or contradictory pointer.
func NewSpec(useCase string, schemaVersion uint32, opts ...Option) (*Spec, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.includeSet && len(c.include) == 0 {
		return nil, &Error{Kind: ErrPointer, Offset: -1, Msg: "Include was given no pointer: the fingerprint would ignore the body"}
	}
	sp := &Spec{strict: !c.allowImprecise, require: c.requireIncluded}
	sp.bytesMax, sp.depthMax = c.limits.limits()
	if len(c.include) > 0 || len(c.exclude) > 0 {
		root, err := buildTrie(c.include, c.exclude)
		if err != nil {
			return nil, err
		}
		sp.root = root
	}
	mode := byte(modeDocument)
	if len(c.include) > 0 {
		sp.include = append([]string(nil), c.include...)
		mode = modeInclude
	}
	h := appendField(nil, DomainTag)
	h = appendField(h, useCase)
	h = binary.BigEndian.AppendUint32(h, schemaVersion)
	sp.header = append(h, mode)
	return sp, nil
}

// Of computes the fingerprint of the JSON request body for a one-off
// definition. It compiles the Spec on every call: on a hot path build one
// with NewSpec and call its Of method, which does not allocate.
func Of(useCase string, schemaVersion uint32, body []byte, opts ...Option) (core.Fingerprint, error) {
	sp, err := NewSpec(useCase, schemaVersion, opts...)
	if err != nil {
		return core.Fingerprint{}, err
	}
	return sp.Of(body)
}

// Of computes the fingerprint of the JSON request body: SHA-256 over the
// pre-image described in the package documentation. body must be strict
// I-JSON; the errors are those of Canonicalize, plus ErrPrecision (unless
// AllowImpreciseNumbers) and, with RequireIncluded, ErrPointer.
func (sp *Spec) Of(body []byte) (core.Fingerprint, error) {
	s := getState()
	pre, err := sp.preimage(s, body)
	var fp core.Fingerprint
	if err == nil {
		fp = sha256.Sum256(pre)
	}
	s.buf = pre[:0]
	putState(s)
	return fp, err
}

// preimage builds the bytes that Of hashes, in s.buf.
func (sp *Spec) preimage(s *state, body []byte) ([]byte, error) {
	s.strict = sp.strict
	buf := append(s.buf[:0], sp.header...)
	if sp.include == nil {
		s.precise = sp.strict
		at := len(buf)
		buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0)
		out, err := s.run(buf, body, sp.bytesMax, sp.depthMax, sp.root)
		if err != nil {
			return buf, err
		}
		binary.BigEndian.PutUint64(out[at:], uint64(len(out)-at-8))
		return out, nil
	}

	// The body is canonicalized whole, for validation; sub copies each
	// included value to s.seg as it completes.
	s.precise = false
	s.seg = s.seg[:0]
	s.spans = s.spans[:0]
	for range sp.include {
		s.spans = append(s.spans, span{-1, -1})
	}
	work, err := s.run(buf, body, sp.bytesMax, sp.depthMax, sp.root)
	if err != nil {
		return buf, err
	}
	pre := work[:len(sp.header)]
	pre = binary.BigEndian.AppendUint64(pre, uint64(len(sp.include)))
	for i, p := range sp.include {
		pre = appendField(pre, p)
		v := s.spans[i]
		if v.start < 0 {
			if sp.require {
				return pre, &Error{Kind: ErrPointer, Offset: -1, Msg: "included pointer " + strconv.Quote(p) + " selects nothing in the body"}
			}
			pre = append(pre, 0)
			continue
		}
		pre = append(pre, 1)
		pre = binary.BigEndian.AppendUint64(pre, uint64(v.end-v.start))
		pre = append(pre, s.seg[v.start:v.end]...)
	}
	return pre, nil
}

// appendField appends a length-prefixed field: uint64 big-endian length, then
// the bytes.
func appendField[T string | []byte](dst []byte, f T) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(len(f)))
	return append(dst, f...)
}
