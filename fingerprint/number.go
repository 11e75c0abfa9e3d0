package fingerprint

import (
	"strconv"
)

// safeIntegerMax is 2^53-1, the largest integer n such that n and n+1 are
// both exactly representable as IEEE 754 doubles.
const safeIntegerMax = 1<<53 - 1

// minNormal is the smallest positive normal double, 2^-1022. Below it
// doubles are subnormal and carry fewer significant digits.
const minNormal = 0x1p-1022

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// numLit is a number literal, scanned: JSON's grammar checked, its parts
// located by their input offsets (offsets, not slices, keep it free of
// pointers and so of write barriers).
type numLit struct {
	start, end int // the whole literal
	neg        bool
	// The digits before and after the decimal point: in[intStart:intEnd] and
	// in[fracStart:fracEnd], which may be empty.
	intStart, intEnd, fracStart, fracEnd int
	exp                                  int  // the exponent's value, 0 if none
	expBig                               bool // the exponent has 10 significant digits or more, beyond exp
}

// digit returns the literal's jth digit, counting integer digits then
// fraction digits.
func (l *numLit) digit(in []byte, j int) byte {
	if intLen := l.intEnd - l.intStart; j >= intLen {
		return in[l.fracStart+j-intLen]
	}
	return in[l.intStart+j]
}

// number parses the number at s.pos, checking JSON's grammar itself, and
// appends its canonical form (ECMAScript Number::toString, RFC 8785 section
// 3.2.2.3).
func (s *state) number() error {
	var l numLit
	if err := s.scanNumber(&l); err != nil {
		return err
	}
	in := s.in
	// The significant digits are the integer and fraction digits without
	// leading and trailing zeros, from f to last: the value is 0.D × 10^n.
	total := l.intEnd - l.intStart + l.fracEnd - l.fracStart
	f := 0
	for f < total && l.digit(in, f) == '0' {
		f++
	}
	if f == total {
		s.out = append(s.out, '0') // every zero, -0 included
		return nil
	}
	last := total - 1
	for l.digit(in, last) == '0' {
		last--
	}
	k := last - f + 1
	n := l.intEnd - l.intStart - f + l.exp

	// Fast path: at most 15 significant digits (DBL_DIG) in the normal range
	// round-trip through a double, so the shortest round-trip digits are the
	// literal's own and no conversion is needed. Under the precision rule,
	// n <= 15 also keeps |x| < 10^15 < 2^53.
	if k <= 15 && !l.expBig && n > -300 && n < 300 && !(s.precise && n > 15) {
		var d [15]byte
		for j := range k {
			d[j] = l.digit(in, f+j)
		}
		s.out = appendES(s.out, l.neg, d[:k], n)
		return nil
	}
	return s.float(&l, f, k)
}

// scanNumber scans the number literal at s.pos into l, checking JSON's
// grammar, and moves s.pos past it.
func (s *state) scanNumber(l *numLit) error {
	in := s.in
	start := s.pos
	i := start
	l.start = start
	l.neg = in[i] == '-'
	if l.neg {
		i++
	}
	l.intStart = i
	switch {
	case i >= len(in):
		return newError(ErrNumber, i, "unexpected end of input, expected a digit after '-'")
	case in[i] == '0':
		i++
		if i < len(in) && isDigit(in[i]) {
			return newError(ErrNumber, start, "leading zeros are not allowed in a number")
		}
	case isDigit(in[i]):
		for i < len(in) && isDigit(in[i]) {
			i++
		}
	default:
		return newError(ErrNumber, i, "expected a digit after '-', found "+quoteByte(in[i]))
	}
	l.intEnd = i
	l.fracStart, l.fracEnd = i, i
	if i < len(in) && in[i] == '.' {
		i++
		l.fracStart = i
		for i < len(in) && isDigit(in[i]) {
			i++
		}
		if i == l.fracStart {
			return newError(ErrNumber, i, "expected a digit after the decimal point")
		}
		l.fracEnd = i
	}
	if i < len(in) && in[i]|0x20 == 'e' {
		var err error
		if i, err = s.scanExponent(l, i+1); err != nil {
			return err
		}
	}
	if i < len(in) && isWordByte(in[i]) {
		return newError(ErrNumber, i, "invalid character "+quoteByte(in[i])+" in a number")
	}
	l.end = i
	s.pos = i
	return nil
}

// scanExponent scans the exponent whose sign or digits start at in[i] into l
// and returns the offset after it.
func (s *state) scanExponent(l *numLit, i int) (int, error) {
	in := s.in
	expNeg := false
	if i < len(in) && (in[i] == '+' || in[i] == '-') {
		expNeg = in[i] == '-'
		i++
	}
	d := i
	exp := 0
	for i < len(in) && isDigit(in[i]) {
		if exp < 100000000 {
			exp = exp*10 + int(in[i]-'0')
		} else {
			l.expBig = true
		}
		i++
	}
	if i == d {
		return i, newError(ErrNumber, i, "expected a digit in the exponent")
	}
	if expNeg {
		exp = -exp
	}
	l.exp = exp
	return i, nil
}

// float formats the number the fast path cannot: it rounds the literal to the
// nearest double and writes that double's shortest round-trip digits, as
// Number::toString does. k significant digits of the literal start at digit
// f.
func (s *state) float(l *numLit, f, k int) error {
	lit := s.in[l.start:l.end]
	x, err := strconv.ParseFloat(string(lit), 64)
	if err != nil { // the grammar was checked: this is ErrRange, an overflow
		return newError(ErrNumberOverflow, l.start, "number "+excerpt(lit)+" is beyond the largest double, 1.7976931348623157e+308")
	}
	var buf [17]byte
	digits, x10 := shortestDigits(&buf, x)
	if s.precise {
		if err := l.checkPrecise(s.in, x, digits, x10, f, k); err != nil {
			return err
		}
	}
	if x == 0 { // an underflow to zero: ECMAScript rounds it to 0 too
		s.out = append(s.out, '0')
		return nil
	}
	s.out = appendES(s.out, l.neg, digits, x10+1)
	return nil
}

// shortestDigits returns the shortest digits that round-trip to |x|, in buf,
// and the decimal exponent of the first: |x| = d.ddd × 10^x10.
func shortestDigits(buf *[17]byte, x float64) ([]byte, int) {
	var e [32]byte
	s := strconv.AppendFloat(e[:0], x, 'e', -1, 64)
	if s[0] == '-' {
		s = s[1:]
	}
	// s is d[.ddd]e±x: collect the digits and the exponent.
	nd := 0
	j := 0
	for ; s[j] != 'e'; j++ {
		if s[j] != '.' {
			buf[nd] = s[j]
			nd++
		}
	}
	x10, _ := strconv.Atoi(string(s[j+1:]))
	return buf[:nd], x10
}

// checkPrecise applies the precision rule to the literal l, which rounds to
// x, whose shortest digits are digits × 10^x10: a double must carry l
// exactly. k significant digits of l start at digit f.
func (l *numLit) checkPrecise(in []byte, x float64, digits []byte, x10, f, k int) error {
	lit := in[l.start:l.end]
	switch {
	case x > safeIntegerMax || x < -safeIntegerMax:
		return newError(ErrPrecision, l.start, "number "+excerpt(lit)+" is outside ±(2^53-1), where distinct integers share one double; send amounts as integer minor units within that range or as strings")
	case x == 0:
		return newError(ErrPrecision, l.start, "number "+excerpt(lit)+" underflows to 0")
	case (k > 15 || x < minNormal && x > -minNormal) && !l.sameDigits(in, digits, f, k):
		// Subnormals keep fewer than 15 digits, so there every literal
		// must be the shortest form.
		return newError(ErrPrecision, l.start, "number "+excerpt(lit)+" has more significant digits than a double keeps (it would round to "+string(appendES(nil, l.neg, digits, x10+1))+"); send it as a string")
	}
	return nil
}

// sameDigits reports whether d are the k significant digits of l that start
// at digit f.
func (l *numLit) sameDigits(in, d []byte, f, k int) bool {
	if len(d) != k {
		return false
	}
	for j, c := range d {
		if l.digit(in, f+j) != c {
			return false
		}
	}
	return true
}

// appendES appends the number (-)0.d × 10^n as ECMAScript Number::toString
// does (ECMA-262 section 6.1.6.1.20), where d holds the shortest round-trip
// digits without leading or trailing zeros.
func appendES(dst []byte, neg bool, d []byte, n int) []byte {
	if neg {
		dst = append(dst, '-')
	}
	k := len(d)
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		e := n - 1
		if e < 0 {
			dst = append(dst, '-')
			e = -e
		} else {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(e), 10)
	}
	return dst
}

// excerpt quotes a number literal for an error message, shortened if long.
func excerpt(lit []byte) string {
	if len(lit) > 40 {
		return string(lit[:37]) + "..."
	}
	return string(lit)
}
