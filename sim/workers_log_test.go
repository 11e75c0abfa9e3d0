package sim

import (
	"bytes"
	"log/slog"
	"testing"
)

// TestWorkersLogNothing: a seed whose reconciler gives a key up (seed 3 of
// simrun's single-seed settings) reports it, and the workers log nothing
// on the process's default logger, which simrun prints to its stderr.
func TestWorkersLogNothing(t *testing.T) {
	var logged bytes.Buffer
	was := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(was)
	cfg := ConfigDefault()
	cfg.Seed, cfg.Requests, cfg.Swarm, cfg.LinCheck = 3, 1000, false, false
	r := run(cfg, false)
	if len(r.Violations) > 0 {
		t.Fatalf("violations: %v", r.Violations)
	}
	if r.Abandoned == 0 {
		t.Fatal("seed 3 gave no key up: the test no longer has a record to log")
	}
	if logged.Len() > 0 {
		t.Errorf("the workers logged:\n%s", logged.String())
	}
}
