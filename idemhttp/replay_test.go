package idemhttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/idemhttp"
	memstore "github.com/idemkit/idem/store/mem"
)

// replayWorld is one anonymous route with the Link header replayed, over a
// memory store the test can read records from.
type replayWorld struct {
	mem *memstore.Store
	h   http.Handler
}

func newReplayWorld(t *testing.T, handler http.HandlerFunc) *replayWorld {
	t.Helper()
	mem := memstore.New(memstore.Options{})
	ex, err := idem.New(mem)
	if err != nil {
		t.Fatal(err)
	}
	protect, err := idemhttp.New(ex, idemhttp.Route{UseCase: "replay", Anonymous: true, ReplayHeaders: []string{"link"}})
	if err != nil {
		t.Fatal(err)
	}
	return &replayWorld{mem: mem, h: protect(handler)}
}

// storedHeaders are the headers the key's record holds, as "Name: value".
func (rw *replayWorld) storedHeaders(t *testing.T, key string) []string {
	t.Helper()
	snap, err := rw.mem.Load(context.Background(), core.Scope{Principal: idemhttp.AnonymousPrincipal, UseCase: "replay", Key: key})
	if err != nil || snap.Record.Status != core.StatusCompleted {
		t.Fatalf("the record of %s: %v, %v; want it completed", key, snap.Record.Status, err)
	}
	var out []string
	for _, h := range snap.Record.Response.Headers {
		out = append(out, h.Name+": "+h.Value)
	}
	return out
}

// TestOnlyTheRouteHeadersAreStored: the record keeps the headers the route
// replays (Content-Type, Location, then its own, each value in order) and
// no other the handler set: a session's Set-Cookie is this client's, not
// every retry's, and must not sit in the store.
func TestOnlyTheRouteHeadersAreStored(t *testing.T) {
	rw := newReplayWorld(t, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Set-Cookie", "session=secret")
		h.Set("X-Trace", "only-this-answer")
		h.Add("Link", "</a>; rel=first")
		h.Add("Link", "</b>; rel=second")
		h.Set("Location", "/payments/1")
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id":1}`)
	})
	first := postTo(rw.h, context.Background())
	want := []string{"Content-Type: application/json", "Location: /payments/1", "Link: </a>; rel=first", "Link: </b>; rel=second"}
	if got := rw.storedHeaders(t, key1); !slices.Equal(got, want) {
		t.Errorf("stored headers %q, want %q", got, want)
	}
	// The replay sends every stored value, in order, and nothing else.
	again := postTo(rw.h, context.Background())
	for _, name := range []string{"Content-Type", "Location", "Link"} {
		if got, want := again.Header().Values(name), first.Header().Values(name); !slices.Equal(got, want) {
			t.Errorf("replayed %s %q, first %q", name, got, want)
		}
	}
	if again.Header().Get("Set-Cookie") != "" || again.Header().Get("X-Trace") != "" || !replayed(again) || again.Body.String() != `{"id":1}` {
		t.Errorf("replay %d %q %s", again.Code, again.Header(), again.Body)
	}
}

// TestA204IsReplayedWithoutBody: a body written after 204 is refused as
// net/http refuses it (http.ErrBodyNotAllowed), so the response is one
// HTTP can replay: the retry gets the 204, not 409 outcome_unknown.
func TestA204IsReplayedWithoutBody(t *testing.T) {
	var writeErr error
	runs := 0
	rw := newReplayWorld(t, func(w http.ResponseWriter, r *http.Request) {
		runs++
		w.WriteHeader(http.StatusNoContent)
		_, writeErr = w.Write([]byte("not for a 204"))
	})
	if rec := postTo(rw.h, context.Background()); rec.Code != http.StatusNoContent || rec.Body.Len() != 0 || !errors.Is(writeErr, http.ErrBodyNotAllowed) {
		t.Fatalf("first: %d %q, the handler's Write: %v; want 204, no body, http.ErrBodyNotAllowed", rec.Code, rec.Body, writeErr)
	}
	if rec := postTo(rw.h, context.Background()); rec.Code != http.StatusNoContent || !replayed(rec) || rec.Body.Len() != 0 || runs != 1 {
		t.Fatalf("the retry: %d %q %s, %d runs; want the 204 replayed", rec.Code, rec.Header(), rec.Body, runs)
	}
}

// TestConnectionHeadersAreNeverReplayed: Route.ReplayHeaders refuses every
// header that belongs to the connection or to one message (RFC 9110 §7.6.1
// hop-by-hop fields, the framing, the date) and the replay marker, in any
// case: a replay computes its own.
func TestConnectionHeadersAreNeverReplayed(t *testing.T) {
	ex, err := idem.New(memstore.New(memstore.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding", "Upgrade",
		"Content-Length", "Date", idemhttp.ReplayedHeader,
	} {
		for _, spelling := range []string{name, strings.ToLower(name)} {
			_, err := idemhttp.New(ex, idemhttp.Route{UseCase: "u", Anonymous: true, ReplayHeaders: []string{spelling}})
			if err == nil || !strings.Contains(err.Error(), "never replayed") {
				t.Errorf("ReplayHeaders %q: %v, want it refused (never replayed)", spelling, err)
			}
		}
	}
}
