package core

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestFormatMatchesFmt: the core's own formatter writes what fmt would, for
// every verb and argument type the core uses, so that dropping fmt changed
// no message.
func TestFormatMatchesFmt(t *testing.T) {
	cases := []struct {
		format string
		args   []any
	}{
		{"%d bytes, want %d..%d", []any{3, KeyBytesMin, 255}},
		{"token %d, record already at %d", []any{Token(7), Token(1 << 63)}},
		{"%v event", []any{EventReserve}},
		{"%v", []any{EventKind(200)}},
		{"%v record with version 0", []any{StatusCompleted}},
		{"lease duration %v must be positive", []any{-3 * time.Second}},
		{"TTL %v is over the %v cap", []any{73 * time.Hour, TTLMax}},
		{"header %d: name byte 0x%02x at %d is not a token character", []any{2, byte('\n'), 0}},
		{"header %q: control byte 0x%02x at %d in the value", []any{"X-A\r\n\"é", byte(0x7f), 12}},
		{"%s has control character U+%04X at byte %d", []any{"principal", rune(0x85), 4}},
		{"%s 0x%02x at byte %d", []any{"non-ASCII byte", byte(0xff), 15}},
		{"%v", []any{errors.New("odd length hex")}},
		{"reconcile attempts max must be at least 1", nil},
		{"100%% %v", []any{uint32(5)}},
		{"decision(%d)", []any{uint8(250)}},
		{"%v", []any{VerdictExecuted}},
		{"%v", []any{Fingerprint{1, 2}}},
	}
	for _, c := range cases {
		if got, want := sprintf(c.format, c.args...), fmt.Sprintf(c.format, c.args...); got != want {
			t.Errorf("%q: got %q, fmt says %q", c.format, got, want)
		}
		got := refuse(ErrInvalidPolicy, c.format, c.args...)
		want := fmt.Errorf("%w: "+c.format, append([]any{ErrInvalidPolicy}, c.args...)...)
		if got.Error() != want.Error() || !errors.Is(got, ErrInvalidPolicy) || !Refused(got) {
			t.Errorf("refuse %q: %v, fmt says %v", c.format, got, want)
		}
	}
}
