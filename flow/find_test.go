package flow

import (
	"errors"
	"fmt"
	"testing"
)

// TestFind: find sees the error itself, one wrapped by %w at any depth,
// and one inside errors.Join, as errors.As does; and nothing else.
func TestFind(t *testing.T) {
	ne := &NotExecutedError{Code: "declined"}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"itself", ne, true},
		{"wrapped twice", fmt.Errorf("b: %w", fmt.Errorf("a: %w", ne)), true},
		{"joined, second", errors.Join(errors.New("x"), ne), true},
		{"wrapped inside a join", errors.Join(errors.New("x"), fmt.Errorf("a: %w", ne)), true},
		{"absent", fmt.Errorf("a: %w", errors.New("x")), false},
		{"another type", &PanicError{Value: "boom"}, false},
		{"nil", nil, false},
	} {
		got, ok := find[*NotExecutedError](c.err)
		if ok != c.want || ok && got != ne {
			t.Errorf("%s: find = %v, %v; want %v", c.name, got, ok, c.want)
		}
		var as *NotExecutedError
		if errors.As(c.err, &as) != ok {
			t.Errorf("%s: find says %v, errors.As says the opposite", c.name, ok)
		}
	}
}
