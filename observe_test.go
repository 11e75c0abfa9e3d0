package idem_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/idemkit/idem"
)

// logLines is a slog.Handler that keeps each record as "LEVEL message
// key=value ...", at every level.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	return nil
}
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }

// logged builds f's executor again with a logger (and, if secret is set,
// WithKeyHashSecret) and returns what it logs.
func (f *fixture) logged(t *testing.T, secret []byte) *logLines {
	t.Helper()
	l := &logLines{}
	opts := []idem.Option{idem.WithPolicy(f.ex.Policy()), idem.WithMetrics(f.metrics), idem.WithExecutorLogger(slog.New(l))}
	if secret != nil {
		opts = append(opts, idem.WithKeyHashSecret(secret))
	}
	ex, err := idem.New(f.store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	f.ex = ex
	return l
}

// onlyLine is the one line of l that starts with prefix.
func (l *logLines) onlyLine(t *testing.T, prefix string) string {
	t.Helper()
	var found []string
	for _, s := range l.lines {
		if strings.HasPrefix(s, prefix) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("lines starting %q: %q (all: %q)", prefix, found, l.lines)
	}
	return found[0]
}

// TestLogsAnOutcomeNotRecorded: an outcome the store failed to write is a
// WARN line that says why, with the token, the use case and no key.
func TestLogsAnOutcomeNotRecorded(t *testing.T) {
	f := newFixture(t, nil)
	logs := f.logged(t, nil)
	r, err := f.ex.Do(context.Background(), request(key1, payload), func(context.Context, idem.Attempt) (idem.Response, error) {
		f.store.fail("write")
		return created, nil
	})
	if err != nil || r.Recorded {
		t.Fatalf("%+v %v", r, err)
	}
	line := logs.onlyLine(t, "WARN idem: an outcome could not be recorded")
	for _, want := range []string{"use_case=payments.create", "answer=executed", "recorded=false", "why=the store failed", "error=", "token="} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}
	if strings.Contains(line, key1) || strings.Contains(line, "acme") || strings.Contains(line, "user-1") || strings.Contains(line, "key_hash") {
		t.Errorf("%q names the scope", line)
	}
}

// TestLogsAFencedOffOutcome: an attempt whose record passed to the
// reconciler while it ran has its completion refused: a WARN line.
func TestLogsAFencedOffOutcome(t *testing.T) {
	f := newFixture(t, nil)
	logs := f.logged(t, []byte("s"))
	ctx := context.Background()
	notExecuted := func(context.Context, idem.Record) (idem.Finding, error) {
		return idem.Finding{Verdict: idem.VerdictNotExecuted}, nil
	}
	r, err := f.ex.Do(ctx, request(key1, payload), func(context.Context, idem.Attempt) (idem.Response, error) {
		f.clock.Advance(f.ex.Policy().LeaseDuration) // the process stalls past its lease
		if n, err := f.sweeper(t).RunOnce(ctx); n != 1 || err != nil {
			t.Errorf("sweeper: %d %v", n, err)
		}
		if n, err := f.reconciler(t, notExecuted).RunOnce(ctx); n != 1 || err != nil {
			t.Errorf("reconciler: %d %v", n, err)
		}
		return created, nil
	})
	if err != nil || r.Recorded {
		t.Fatalf("%+v %v", r, err)
	}
	line := logs.onlyLine(t, "WARN idem: an outcome was refused: the attempt was fenced off")
	if !strings.Contains(line, "key_hash="+idem.KeyHash([]byte("s"), request(key1, payload).Scope)) || !strings.Contains(line, "recorded=false") {
		t.Errorf("%q", line)
	}
}

// TestLogsARecordLeftForAnOperator: the reconciler's last attempt on a
// record it could not settle is a WARN line.
func TestLogsARecordLeftForAnOperator(t *testing.T) {
	f := newFixture(t, func(p *idem.Policy) { p.ReconcileAttemptsMax = 1 })
	logs := f.logged(t, nil)
	ctx := context.Background()
	if _, err := f.ex.Do(ctx, request(key1, payload), f.act(idem.Response{}, errors.New("timeout"))); !errors.Is(err, idem.ErrOutcomeUnknown) {
		t.Fatal(err)
	}
	f.clock.Advance(f.ex.Policy().LeaseDuration + f.ex.Policy().ReconcileBackoffMax)
	stillUnknown := func(context.Context, idem.Record) (idem.Finding, error) {
		return idem.Finding{Verdict: idem.VerdictStillUnknown}, nil
	}
	if _, err := f.reconciler(t, stillUnknown).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	line := logs.onlyLine(t, "WARN idem: the reconciler gave up on a record")
	for _, want := range []string{"worker=reconcile", "decision=abandoned", "reconcile_attempts=1", "use_case=payments.create"} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}
	if got := logs.onlyLine(t, "DEBUG idem: answered"); !strings.Contains(got, "answer=outcome_unknown") || !strings.Contains(got, "recorded=true") {
		t.Errorf("the unknown's line: %q", got)
	}
}
