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

// number parses the number at s.pos, checking JSON's grammar itself, and
// appends its canonical form (ECMAScript Number::toString, RFC 8785 section
// 3.2.2.3).
func (s *state) number() error {
	in := s.in
	start := s.pos
	i := start
	neg := in[i] == '-'
	if neg {
		i++
	}
	intStart := i
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
	intEnd := i
	fracStart, fracEnd := i, i
	if i < len(in) && in[i] == '.' {
		i++
		fracStart = i
		for i < len(in) && isDigit(in[i]) {
			i++
		}
		if i == fracStart {
			return newError(ErrNumber, i, "expected a digit after the decimal point")
		}
		fracEnd = i
	}
	exp, expBig := 0, false
	if i < len(in) && in[i]|0x20 == 'e' {
		i++
		expNeg := false
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			expNeg = in[i] == '-'
			i++
		}
		d := i
		for i < len(in) && isDigit(in[i]) {
			if exp < 100000000 {
				exp = exp*10 + int(in[i]-'0')
			} else {
				expBig = true
			}
			i++
		}
		if i == d {
			return newError(ErrNumber, i, "expected a digit in the exponent")
		}
		if expNeg {
			exp = -exp
		}
	}
	if i < len(in) && isWordByte(in[i]) {
		return newError(ErrNumber, i, "invalid character "+quoteByte(in[i])+" in a number")
	}
	s.pos = i

	// The significant digits are the integer and fraction digits without
	// leading and trailing zeros: the value is 0.D × 10^n.
	intLen := intEnd - intStart
	total := intLen + fracEnd - fracStart
	digit := func(j int) byte {
		if j < intLen {
			return in[intStart+j]
		}
		return in[fracStart+j-intLen]
	}
	f := 0
	for f < total && digit(f) == '0' {
		f++
	}
	if f == total {
		s.out = append(s.out, '0') // every zero, -0 included
		return nil
	}
	l := total - 1
	for digit(l) == '0' {
		l--
	}
	k := l - f + 1
	n := intLen - f + exp

	// Fast path: at most 15 significant digits (DBL_DIG) in the normal range
	// round-trip through a double, so the shortest round-trip digits are the
	// literal's own and no conversion is needed. Under the precision rule,
	// n <= 15 also keeps |x| < 10^15 < 2^53.
	if k <= 15 && !expBig && n > -300 && n < 300 && !(s.precise && n > 15) {
		var d [15]byte
		for j := range k {
			d[j] = digit(f + j)
		}
		s.out = appendES(s.out, neg, d[:k], n)
		return nil
	}

	lit := in[start:i]
	x, err := strconv.ParseFloat(string(lit), 64)
	if err != nil { // the grammar was checked: this is ErrRange, an overflow
		return newError(ErrNumberOverflow, start, "number "+excerpt(lit)+" is beyond the largest double, 1.7976931348623157e+308")
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], x, 'e', -1, 64)
	if e[0] == '-' {
		e = e[1:]
	}
	// e is d[.ddd]e±x: collect the digits in place and the exponent.
	var digits [17]byte
	nd := 0
	j := 0
	for ; e[j] != 'e'; j++ {
		if e[j] != '.' {
			digits[nd] = e[j]
			nd++
		}
	}
	x10, _ := strconv.Atoi(string(e[j+1:]))
	if s.precise {
		switch {
		case x > safeIntegerMax || x < -safeIntegerMax:
			return newError(ErrPrecision, start, "number "+excerpt(lit)+" is outside ±(2^53-1), where distinct integers share one double; send amounts as integer minor units within that range or as strings")
		case x == 0:
			return newError(ErrPrecision, start, "number "+excerpt(lit)+" underflows to 0")
		case (k > 15 || x < minNormal && x > -minNormal) && !sameDigits(digits[:nd], k, func(j int) byte { return digit(f + j) }):
			// Subnormals keep fewer than 15 digits, so there every literal
			// must be the shortest form.
			return newError(ErrPrecision, start, "number "+excerpt(lit)+" has more significant digits than a double keeps (it would round to "+string(appendES(nil, neg, digits[:nd], x10+1))+"); send it as a string")
		}
	}
	if x == 0 { // an underflow to zero: ECMAScript rounds it to 0 too
		s.out = append(s.out, '0')
		return nil
	}
	s.out = appendES(s.out, neg, digits[:nd], x10+1)
	return nil
}

func sameDigits(d []byte, k int, digit func(int) byte) bool {
	if len(d) != k {
		return false
	}
	for j, c := range d {
		if digit(j) != c {
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
