package linearizability

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// checkLife checks h under p and fails unless the result is want.
func checkLife(t *testing.T, h []LifecycleOperation, p core.Policy, want porcupine.CheckResult) {
	t.Helper()
	r := CheckLifecycleHistory(h, p, CheckOptions{Timeout: 10 * time.Second, NoVisualization: true})
	if r.Err != nil || r.Check != want {
		t.Fatalf("%v, want %v", r, want)
	}
}

// TestAmbiguousWriteNeedsItsWholePrecondition: an ambiguous write applies
// only where the record has both the version and the token it expected. One
// that expected an older version (a lost update), or another attempt's
// token at the record's version (a zombie of an earlier life), cannot
// explain a later operation that read its record.
func TestAmbiguousWriteNeedsItsWholePrecondition(t *testing.T) {
	p := core.PolicyDefault()
	beat := core.Event{Kind: core.EventHeartbeat}
	h, _ := lifecycleRun(t, p, false, core.Event{Kind: core.EventReserve, Fingerprint: fpA}, beat, beat, beat)
	if w := h[2].Transition.Write; w.Kind != core.WriteUpdate || w.ExpectVersion != 2 {
		t.Fatalf("the second heartbeat wrote %+v, want an update of version 2", w)
	}
	for _, c := range []struct {
		what string
		edit func(*core.Write)
		want porcupine.CheckResult
	}{
		{"the record's version and token", func(*core.Write) {}, porcupine.Ok},
		{"an older version", func(w *core.Write) { w.ExpectVersion-- }, porcupine.Illegal},
		{"another attempt's token", func(w *core.Write) { w.ExpectToken++ }, porcupine.Illegal},
	} {
		t.Run(c.what, func(t *testing.T) {
			bad := append([]LifecycleOperation{}, h...)
			amb := &bad[2]
			amb.Ended, amb.WriteKnown = EndedIndeterminate, true
			c.edit(&amb.Transition.Write)
			checkLife(t, bad, p, c.want) // the third heartbeat read what the ambiguous one wrote
		})
	}
}

// applyThenFail is a store whose next Apply, once armed, applies and then
// reports an error: an ambiguous commit on the fast path.
type applyThenFail struct {
	*memstore.Store
	armed bool
}

func (f *applyThenFail) Apply(ctx context.Context, scope core.Scope, ev core.Event, p *core.Policy, a *store.Applied) error {
	err := f.Store.Apply(ctx, scope, ev, p, a)
	if f.armed && err == nil {
		f.armed = false
		return errors.New("connection reset after commit")
	}
	return err
}

// TestRecorderKeepsAnAmbiguousApplyAmbiguous: an Apply that failed in a
// way that may have applied is recorded indeterminate (and the history
// stays linearizable though it did apply); only the core's refusal of bad
// input is recorded as failed.
func TestRecorderKeepsAnAmbiguousApplyAmbiguous(t *testing.T) {
	ctx := context.Background()
	p := core.PolicyDefault()
	f := &applyThenFail{Store: memstore.New(memstore.Options{})}
	rec := NewRecorder(f, nil)
	c := rec.Client(0)
	a, err := applyOver(ctx, c, &p, scopeX, core.Event{Kind: core.EventReserve, Fingerprint: fpA})
	if err != nil {
		t.Fatal(err)
	}
	token := a.Transition.Decision.Token
	f.armed = true
	if _, err := applyOver(ctx, c, &p, scopeX, core.Event{Kind: core.EventHeartbeat, Token: token}); err == nil {
		t.Fatal("the ambiguous heartbeat succeeded")
	}
	if _, err := applyOver(ctx, c, &p, scopeX, core.Event{Kind: core.EventHeartbeat, Token: token}); err != nil {
		t.Fatal(err)
	}
	if _, err := applyOver(ctx, c, &p, scopeX, core.Event{Kind: core.EventReserve}); !core.Refused(err) {
		t.Fatalf("a reserve without a fingerprint: %v, want the core's refusal", err)
	}
	life := rec.LifecycleHistory()
	want := []Ending{EndedOK, EndedIndeterminate, EndedOK, EndedFailed}
	if len(life) != len(want) {
		t.Fatalf("%d operations recorded, want %d", len(life), len(want))
	}
	for i, e := range want {
		if life[i].Ended != e {
			t.Errorf("operation %d (%v) recorded %v, want %v", i, life[i].Event.Kind, life[i].Ended, e)
		}
	}
	if life[2].Record.Version != 3 {
		t.Fatalf("the heartbeat after the ambiguous one wrote version %d, want 3: the ambiguous one did not apply", life[2].Record.Version)
	}
	checkLife(t, life, p, porcupine.Ok)
}

// TestStoreModelComparesEveryByteOfARead: a load that reads the stored
// record with another header value, header name or body is not a read of
// it.
func TestStoreModelComparesEveryByteOfARead(t *testing.T) {
	stored := recordAt(scopeX, core.StatusCompleted, 2, 5)
	stored.Response = core.Response{StatusCode: 201, Headers: []core.Header{{Name: "Location", Value: "/payments/p-1"}}, Body: []byte(`{"paymentId":"p-1"}`)}
	for _, c := range []struct {
		what string
		edit func(*core.Response)
		want porcupine.CheckResult
	}{
		{"the same bytes", func(*core.Response) {}, porcupine.Ok},
		{"another header value", func(r *core.Response) { r.Headers[0].Value = "/payments/p-2" }, porcupine.Illegal},
		{"another header name", func(r *core.Response) { r.Headers[0].Name = "Content-Location" }, porcupine.Illegal},
		{"another body", func(r *core.Response) { r.Body = []byte(`{"paymentId":"p-2"}`) }, porcupine.Illegal},
	} {
		read := stored
		read.Response = stored.Response.Clone()
		c.edit(&read.Response)
		h := []StoreOperation{ins(0, 0, 1, stored, EndedOK), ld(1, 2, 3, read, 6)}
		if r := CheckStoreHistory(h, CheckOptions{Timeout: 10 * time.Second, NoVisualization: true}); r.Err != nil || r.Check != c.want {
			t.Errorf("a read of %s: %v, want %v", c.what, r, c.want)
		}
	}
}
