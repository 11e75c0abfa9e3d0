package fingerprint

// The public entry points and their limits.

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
