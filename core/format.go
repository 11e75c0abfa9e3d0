package core

import "strconv"

// The core formats its own error messages and names instead of using fmt:
// fmt brings reflection with it, and costs the wasm build of the core half
// a megabyte (wasm/ABI.md). format understands exactly the verbs the core
// uses, with fmt's meaning: %d, %v, %s, %q, %02x and %04X.

// refusal is an error of the core: one of its sentinels, and what was wrong.
type refusal struct {
	sentinel error
	detail   string
}

func (e *refusal) Error() string { return e.sentinel.Error() + ": " + e.detail }
func (e *refusal) Unwrap() error { return e.sentinel }

// refuse is fmt.Errorf("%w: "+format, sentinel, args...) without fmt.
func refuse(sentinel error, format string, args ...any) error {
	return &refusal{sentinel: sentinel, detail: format1(format, args)}
}

// sprintf is fmt.Sprintf for the verbs above.
func sprintf(format string, args ...any) string { return format1(format, args) }

func format1(format string, args []any) string {
	b := make([]byte, 0, len(format)+16*len(args))
	next := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b = append(b, c)
			continue
		}
		verb := format[i+1]
		i++
		if verb == '%' {
			b = append(b, '%')
			continue
		}
		width := 0
		if verb == '0' && i+2 < len(format) { // %02x, %04X
			width = int(format[i+1] - '0')
			verb = format[i+2]
			i += 2
		}
		if next >= len(args) {
			b = append(b, "%!"...)
			b = append(b, verb)
			b = append(b, "(MISSING)"...)
			continue
		}
		b = appendArg(b, verb, width, args[next])
		next++
	}
	return string(b)
}

func appendArg(b []byte, verb byte, width int, arg any) []byte {
	switch verb {
	case 'x', 'X':
		n, _ := unsigned(arg)
		s := strconv.FormatUint(n, 16)
		if verb == 'X' {
			s = upper(s)
		}
		for l := len(s); l < width; l++ {
			b = append(b, '0')
		}
		return append(b, s...)
	case 'q':
		if s, ok := arg.(string); ok {
			return strconv.AppendQuote(b, s)
		}
	case 'd':
		if n, ok := unsigned(arg); ok {
			return strconv.AppendUint(b, n, 10)
		}
		if n, ok := arg.(int); ok {
			return strconv.AppendInt(b, int64(n), 10)
		}
		if n, ok := arg.(int64); ok {
			return strconv.AppendInt(b, n, 10)
		}
	}
	switch v := arg.(type) { // %v and %s
	case string:
		return append(b, v...)
	case error:
		return append(b, v.Error()...)
	case interface{ String() string }:
		return append(b, v.String()...)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	}
	if n, ok := unsigned(arg); ok {
		return strconv.AppendUint(b, n, 10)
	}
	return append(b, "%!(BADARG)"...)
}

// unsigned is arg as a number, for the unsigned types the core formats.
func unsigned(arg any) (uint64, bool) {
	switch v := arg.(type) {
	case uint8:
		return uint64(v), true
	case uint32:
		return uint64(v), true
	case uint64:
		return v, true
	case Token:
		return uint64(v), true
	case rune:
		return uint64(v), true
	}
	return 0, false
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
