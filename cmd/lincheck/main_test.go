package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// history is a real history of one scope, recorded from a memory store
// (a reserve that executed, then its completion) and written in the
// format of HISTORY.md; with executeTwice, the reserve is answered Execute
// again later, to another client: a store that let the key run twice.
func history(t *testing.T, executeTwice bool) string {
	t.Helper()
	rec := linearizability.NewRecorder(memstore.New(memstore.Options{}), nil)
	p := core.PolicyDefault()
	scope := core.Scope{Tenant: "t", Principal: "p", UseCase: "u", Key: "key-0123456789abcdef"}
	var a store.Applied
	ctx := context.Background()
	if err := store.Apply(ctx, rec.Client(0), scope, core.Event{Kind: core.EventReserve, Fingerprint: core.Fingerprint{1}}, &p, &a); err != nil {
		t.Fatal(err)
	}
	ev := core.Event{Kind: core.EventComplete, Token: a.Transition.Decision.Token, Response: core.Response{StatusCode: 201}}
	if err := store.Apply(ctx, rec.Client(0), scope, ev, &p, &a); err != nil {
		t.Fatal(err)
	}
	h := linearizability.History{Policy: &p, Lifecycle: rec.LifecycleHistory()}
	if executeTwice {
		again := h.Lifecycle[0]
		again.Client = 1
		again.Call, again.Return = h.Lifecycle[1].Return+1, h.Lifecycle[1].Return+2
		h.Lifecycle = append(h.Lifecycle, again)
	}
	var b bytes.Buffer
	if err := linearizability.WriteHistory(&b, h); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func runOn(t *testing.T, history string, extra ...string) (int, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.jsonl")
	if err := os.WriteFile(path, []byte(history), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(append(extra, path), &out, &errOut)
	return code, out.String() + errOut.String()
}

// TestLincheck: a linearizable history exits 0; the same reserve answered
// Execute to a second client later (a store that let it execute twice)
// exits 1 and names the drawing it wrote; a line it cannot read exits 2.
func TestLincheck(t *testing.T) {
	if code, out := runOn(t, history(t, false)); code != 0 || !strings.Contains(out, "Ok") {
		t.Fatalf("linearizable history: exit %d\n%s", code, out)
	}
	html := t.TempDir()
	code, out := runOn(t, history(t, true), "-html", html)
	if code != 1 || !strings.Contains(out, "Illegal") {
		t.Fatalf("a key executed twice: exit %d\n%s", code, out)
	}
	if drawings, _ := filepath.Glob(filepath.Join(html, "*.html")); len(drawings) == 0 || !strings.Contains(out, drawings[0]) {
		t.Errorf("no drawing named in the report (written: %v)\n%s", drawings, out)
	}
	if code, out := runOn(t, `{"type":"store","oops":1}`+"\n"); code != 2 || !strings.Contains(out, "line 1") {
		t.Fatalf("a line it cannot read: exit %d\n%s", code, out)
	}
}
