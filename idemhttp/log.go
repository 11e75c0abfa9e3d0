package idemhttp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/idemkit/idem/store"
)

// logServerProblem logs, once, a 5xx problem the middleware answers: a 503
// at WARN (the store is down, a client went away: the client comes back
// later), any other at ERROR (a fault of the server, to fix). The record
// holds the use case, the code, the status and, for a store failure, the
// store method that failed: never the key, the principal or the tenant,
// and so never the cause's text, which may hold them (a driver's error can
// name the scope).
func (c *config) logServerProblem(p *Problem, cause error) {
	if p.Status < 500 {
		return
	}
	level := slog.LevelError
	if p.Status == http.StatusServiceUnavailable {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{slog.String("use_case", c.useCase), slog.String("code", string(p.Code)), slog.Int("status", p.Status)}
	if se := (*store.Error)(nil); errors.As(cause, &se) {
		attrs = append(attrs, slog.String("store_method", se.Method.String()))
	}
	logger := c.logger
	if logger == nil {
		logger = slog.Default() // at the time of the answer: a default set after New counts
	}
	logger.LogAttrs(context.Background(), level, "idemhttp: "+p.Title, attrs...)
}
