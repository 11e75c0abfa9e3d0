package flow

import (
	"net/http"
	"testing"
)

// TestStatusesAreNetHTTPs: the statuses written as numbers (this package
// does not import net/http) are net/http's.
func TestStatusesAreNetHTTPs(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"accepted", statusAccepted, http.StatusAccepted},
		{"bad request", statusBadRequest, http.StatusBadRequest},
		{"conflict", statusConflict, http.StatusConflict},
		{"unprocessable entity", statusUnprocessableEntity, http.StatusUnprocessableEntity},
		{"internal server error", statusInternalServerError, http.StatusInternalServerError},
		{"service unavailable", statusServiceUnavailable, http.StatusServiceUnavailable},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, net/http says %d", c.name, c.got, c.want)
		}
	}
}
