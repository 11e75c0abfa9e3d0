package idemhttp_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/idemhttp"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
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

// loggedRoute is one route over st whose handler answers 201, or calls
// OutcomeUnknown when the request says X-Test-Unknown, logging to logs.
func loggedRoute(t *testing.T, st store.Store, logs *logCapture) http.Handler {
	t.Helper()
	ex, err := idem.New(st)
	if err != nil {
		t.Fatal(err)
	}
	protect, err := idemhttp.New(ex, idemhttp.Route{UseCase: "payments.create", Principal: principalOf, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	return protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Unknown") != "" {
			idemhttp.OutcomeUnknown(r, errors.New("gateway timed out (test)"))
			w.WriteHeader(http.StatusGatewayTimeout)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
}

// postAs sends body with key as principal; extra is header name, value pairs.
func postAs(h http.Handler, principal, key, body string, extra ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-Principal", principal)
	r.Header.Set(idemhttp.KeyHeaderDefault, key)
	for i := 0; i+1 < len(extra); i += 2 {
		r.Header.Set(extra[i], extra[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// TestClientRefusalsAreNotLogged: the executor's 4xx answers (422
// key_misuse, 409 outcome_unknown) are the client's to handle, not faults
// of the server: nothing is logged.
func TestClientRefusalsAreNotLogged(t *testing.T) {
	logs := &logCapture{}
	h := loggedRoute(t, memstore.New(memstore.Options{}), logs)
	postAs(h, "alice", key1, payment)
	unknown := key1[:30] + "unknwn"
	postAs(h, "alice", unknown, payment, "X-Test-Unknown", "1")
	for name, rec := range map[string]*httptest.ResponseRecorder{
		"another body":       postAs(h, "alice", key1, `{"other":1}`),
		"an unknown's retry": postAs(h, "alice", unknown, payment),
	} {
		if rec.Code/100 != 4 {
			t.Fatalf("%s: %d %s, want a 4xx", name, rec.Code, rec.Body)
		}
	}
	if got := logs.all(); len(got) != 0 {
		t.Fatalf("logged %+v for 4xx answers, want nothing", got)
	}
}

// TestStoreErrorTextIsNotLogged: a store's error may name the scope (a
// driver's message quoting the row): the 503 it causes is logged at WARN
// with the store method, and without the error's text, so never with the
// key or the principal.
func TestStoreErrorTextIsNotLogged(t *testing.T) {
	const principal = "principal-that-must-not-be-logged"
	mem := memstore.New(memstore.Options{})
	naming := store.Wrap(store.Layer{Outer: mem, Inner: mem, Apply: func(store.ApplyFunc) store.ApplyFunc {
		return func(_ context.Context, sc core.Scope, _ core.Event, _ *core.Policy, _ *store.Applied) error {
			return fmt.Errorf("row %s: connection reset (test)", sc)
		}
	}})
	logs := &logCapture{}
	rec := postAs(loggedRoute(t, naming, logs), principal, key1, payment)
	if rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), principal) {
		t.Fatalf("the store down: %d %s, want 503 without the store's error", rec.Code, rec.Body)
	}
	records := logs.all()
	checkLogged(t, records, 1, idem.CodeStoreUnavailable, key1, principal)
	if records[0].attrs["store_method"] == "" {
		t.Errorf("record %+v does not name the store method that failed", records[0])
	}
}
