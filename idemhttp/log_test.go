package idemhttp_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemhttp"
)

// logCapture is a slog.Handler that keeps every record, with its
// attributes as text.
type logCapture struct {
	mu      sync.Mutex
	records []loggedRecord
}

type loggedRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *logCapture) WithGroup(string) slog.Handler            { return c }

func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	rec := loggedRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, rec)
	return nil
}

func (c *logCapture) all() []loggedRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]loggedRecord(nil), c.records...)
}

// checkLogged checks that the records are one WARN per 503 answered, each
// with the use case and the code, and that no record holds the key, the
// principal or the tenant.
func checkLogged(t *testing.T, records []loggedRecord, want int, code idem.Code, secrets ...string) {
	t.Helper()
	if len(records) != want {
		t.Fatalf("%d records logged, want %d (one a 503): %+v", len(records), want, records)
	}
	for _, r := range records {
		if r.level != slog.LevelWarn || r.attrs["use_case"] != "payments.create" || r.attrs["code"] != string(code) || r.attrs["status"] != "503" {
			t.Errorf("record %+v, want WARN with use_case payments.create, code %s, status 503", r, code)
		}
		for _, secret := range secrets {
			if strings.Contains(r.msg, secret) || strings.Contains(fmtAttrs(r.attrs), secret) {
				t.Errorf("record %+v holds %q", r, secret)
			}
		}
	}
}

func fmtAttrs(attrs map[string]string) string {
	var b strings.Builder
	for k, v := range attrs {
		b.WriteString(k + "=" + v + " ")
	}
	return b.String()
}

// e2eEvery503IsLogged: every 503 the middleware answers (the store down,
// a client gone before anything ran) is logged once at WARN, to the
// route's Logger or to slog.Default if it has none, and never with the
// key, the principal or the tenant.
func e2eEvery503IsLogged(t *testing.T, b backend) {
	t.Run("route logger", func(t *testing.T) {
		logs := &logCapture{}
		w := newWorld(t, b, worldOptions{route: func(rt *idemhttp.Route) { rt.Logger = slog.New(logs) }})
		check503sAreLogged(t, w, logs)
	})
	t.Run("default logger", func(t *testing.T) {
		logs := &logCapture{}
		defer slog.SetDefault(slog.Default())
		slog.SetDefault(slog.New(logs))
		w := newWorld(t, b, worldOptions{})
		check503sAreLogged(t, w, logs)
	})
}

func check503sAreLogged(t *testing.T, w *world, logs *logCapture) {
	t.Helper()
	const principal, tenant = "principal-that-must-not-be-logged", "tenant-that-must-not-be-logged"
	if a := w.post(key1, principal, tenant, "application/json", payment); a.status != http.StatusCreated || len(logs.all()) != 0 {
		t.Fatalf("a 201: %d, %d records logged, want none", a.status, len(logs.all()))
	}
	w.setDown(true)
	for range 2 {
		w.post(key1, principal, tenant, "application/json", payment).problem(t, http.StatusServiceUnavailable, idem.CodeStoreUnavailable)
	}
	w.setDown(false)
	records := logs.all()
	checkLogged(t, records, 2, idem.CodeStoreUnavailable, key1, principal, tenant)
	for _, r := range records {
		if r.attrs["store_method"] == "" {
			t.Errorf("record %+v does not name the store method that failed", r)
		}
	}
}
