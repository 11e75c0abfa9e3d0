package idemotel_test

import (
	"log/slog"
	"testing"

	"github.com/idemkit/idem"
)

// TestEndToEndLogs: each Do writes one line (DEBUG, none of them is an
// anomaly) saying how it answered, and the reconciler one for the record
// it settled; none holds a key, tenant or principal, only their hash.
func TestEndToEndLogs(t *testing.T) {
	w := newWorld(t)
	w.run(t)
	type line struct{ level, msg, answer string }
	var got []line
	for _, r := range w.logs.records {
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			noIdentity(t, "a log line", a.Value.String())
			return true
		})
		noIdentity(t, "a log message", r.Message)
		if attrs["use_case"] != useCase || attrs["key_hash"] == "" {
			t.Errorf("%q: attributes %v", r.Message, attrs)
		}
		got = append(got, line{r.Level.String(), r.Message, attrs["answer"] + attrs["decision"]})
	}
	want := []line{
		{"DEBUG", "idem: answered", "executed"},
		{"DEBUG", "idem: answered", "replayed"},
		{"DEBUG", "idem: answered", "key_misuse"},
		{"DEBUG", "idem: answered", "outcome_unknown"},
		{"DEBUG", "idem: worker applied", "resolved"},
	}
	if len(got) != len(want) {
		t.Fatalf("log lines %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %v, want %v", i, got[i], want[i])
		}
	}
	var hash string
	w.logs.records[0].Attrs(func(a slog.Attr) bool {
		if a.Key == "key_hash" {
			hash = a.Value.String()
		}
		return true
	})
	if hash != idem.KeyHash(secret, req(keyDone, "").Scope) {
		t.Errorf("key_hash %q is not the scope's KeyHash", hash)
	}
}
