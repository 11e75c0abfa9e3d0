package idemhttp_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/idemkit/idem/idemhttp"
)

// e2eObsTextLocationIsRecorded (issue 20 §1): a handler that echoes the
// request's path into Location answers a header value with obs-text
// (%E9 decodes to the lone byte 0xE9, which is not UTF-8). The core
// accepts it, so every store must record it: the charge is stored once,
// and a retry is its replay, Location byte for byte. On PostgreSQL, whose
// text refused the byte, the key answered 409 for ever instead.
func e2eObsTextLocationIsRecorded(t *testing.T, b backend) {
	w := newWorld(t, b, worldOptions{})
	w.behave = func(rw http.ResponseWriter, r *http.Request, n int64) {
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Location", r.URL.Path)
		rw.WriteHeader(http.StatusCreated)
		_, _ = rw.Write([]byte(`{"ok":true}`))
	}
	send := func() answer {
		return w.send(call{method: http.MethodPost, path: "/accounts/%E9/payments", key: key1, principal: "alice", contentType: "application/json", body: payment})
	}
	first := send()
	if first.status != http.StatusCreated || first.header.Get("Location") != "/accounts/\xe9/payments" {
		t.Fatalf("first: %d, Location %q %s", first.status, first.header.Get("Location"), first.body)
	}
	for i := range 2 {
		again := send()
		if again.status != http.StatusCreated || again.header.Get(idemhttp.ReplayedHeader) != "true" ||
			again.header.Get("Location") != first.header.Get("Location") || !bytes.Equal(again.body, first.body) {
			t.Fatalf("retry %d: %d, replayed %q, Location %q, body %s", i, again.status, again.header.Get(idemhttp.ReplayedHeader), again.header.Get("Location"), again.body)
		}
	}
	if n := w.executions.Load(); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
}
