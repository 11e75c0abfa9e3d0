package linearizability_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/linearizability"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// recordedHistory is a real history: four clients applying events to
// three scopes of a memory store (reserves, completions, failures), both
// its store calls (a store without the Applier fast path, so that the
// recorder loads, steps and writes) and its events.
func recordedHistory(t *testing.T) linearizability.History {
	t.Helper()
	mem := memstore.New(memstore.Options{})
	rec := linearizability.NewRecorder(struct{ store.Store }{mem}, nil)
	p := core.PolicyDefault()
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			s := rec.Client(c)
			for i := 0; i < 30; i++ {
				scope := core.Scope{Tenant: "t", Principal: "p", UseCase: "u", Key: fmt.Sprintf("key-%d-0123456789abcdef", i%3)}
				fp := core.Fingerprint{byte(i % 3)}
				var a store.Applied
				if store.Apply(context.Background(), s, scope, core.Event{Kind: core.EventReserve, Fingerprint: fp}, &p, &a) != nil ||
					a.Transition.Decision.Kind != core.DecisionExecute {
					continue
				}
				ev := core.Event{Kind: core.EventComplete, Token: a.Transition.Decision.Token, Response: core.Response{StatusCode: 201, Body: []byte(`{"ok":true}`)}}
				if c%2 == 1 {
					ev = core.Event{Kind: core.EventFail, Token: a.Transition.Decision.Token, ErrorCode: "declined"}
				}
				_ = store.Apply(context.Background(), s, scope, ev, &p, &a)
			}
		}(c)
	}
	wg.Wait()
	return linearizability.History{Policy: &p, Store: rec.StoreHistory(), Lifecycle: rec.LifecycleHistory()}
}

func write(t *testing.T, h linearizability.History) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := linearizability.WriteHistory(&b, h); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestHistoryRoundTrip: a history written and read back is written the
// same, and it checks as the history it came from does.
func TestHistoryRoundTrip(t *testing.T) {
	h := recordedHistory(t)
	if len(h.Store) < 50 || len(h.Lifecycle) < 50 {
		t.Fatalf("%d store and %d lifecycle operations: too few to mean anything", len(h.Store), len(h.Lifecycle))
	}
	first := write(t, h)
	back, err := linearizability.ReadHistory(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	if second := write(t, back); !bytes.Equal(first, second) {
		t.Fatalf("the history read back is written differently")
	}
	o := linearizability.CheckOptions{NoVisualization: true}
	if r := linearizability.CheckStoreHistory(back.Store, o); !r.OK() {
		t.Errorf("store history read back: %v", r)
	}
	if r := linearizability.CheckLifecycleHistory(back.Lifecycle, *back.Policy, o); !r.OK() {
		t.Errorf("lifecycle history read back: %v", r)
	}
}

// TestHistoryCatchesAPlantedWrite: a history read from the format in
// which a store let a second reserve execute a key an attempt holds (a
// write without the token check) is not linearizable.
func TestHistoryCatchesAPlantedWrite(t *testing.T) {
	h := recordedHistory(t)
	var planted bool
	for i := range h.Lifecycle {
		op := &h.Lifecycle[i]
		if op.Event.Kind == core.EventReserve && op.Transition.Decision.Kind == core.DecisionExecute {
			again := *op
			again.Client = 99
			again.Call, again.Return = op.Return+1, op.Return+2
			h.Lifecycle = append(h.Lifecycle, again)
			planted = true
			break
		}
	}
	if !planted {
		t.Fatal("no reserve executed in the recorded history")
	}
	back, err := linearizability.ReadHistory(bytes.NewReader(write(t, h)))
	if err != nil {
		t.Fatal(err)
	}
	if r := linearizability.CheckLifecycleHistory(back.Lifecycle, *back.Policy, linearizability.CheckOptions{NoVisualization: true}); r.OK() {
		t.Fatal("a second execution of a held key passed the check")
	}
}

// TestReadHistoryRefusesBadLines: a line the format does not have is an
// error naming its line, never a history that checks as empty.
func TestReadHistoryRefusesBadLines(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"unknown type", `{"type":"load"}`, "line 1"},
		{"unknown field", `{"type":"store","client":0,"call":"1","return":"2","ended":"ok","scope":{"tenant":"","principal":"p","useCase":"u","key":"k"},"method":"load","extra":1}`, "unknown field"},
		{"bad number", `{"type":"store","client":0,"call":"x","return":"2","ended":"ok","scope":{"tenant":"","principal":"p","useCase":"u","key":"k"},"method":"load"}`, "decimal i64"},
		{"bad enum", `{"type":"store","client":0,"call":"1","return":"2","ended":"fine","scope":{"tenant":"","principal":"p","useCase":"u","key":"k"},"method":"load"}`, "ended \"fine\""},
		{"no policy", `{"type":"lifecycle","client":0,"call":"1","return":"2","ended":"failed","scope":{"tenant":"","principal":"p","useCase":"u","key":"k"},"event":{"kind":"reserve","now":null,"fingerprint":"` + strings.Repeat("00", 32) + `","token":"0","response":{"statusCode":0,"headers":null,"body":null,"schemaVersion":0},"errorCode":"","verdict":""}}`, "policy"},
	} {
		_, err := linearizability.ReadHistory(strings.NewReader(c.in + "\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
