package idemotel_test

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemotel"
)

// spanKeys are the only attribute keys a Do's span and its events carry.
var spanKeys = map[attribute.Key]bool{
	"idem.use_case": true, "idem.answer": true, "idem.token": true, "idem.recorded": true, "idem.key_hash": true,
	"idem.event": true, "idem.decision": true, "idem.elapsed_ms": true, "exception.message": true, "exception.type": true,
}

func attrsOf(kvs []attribute.KeyValue) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.String()
	}
	return m
}

// TestEndToEndSpans: one span per Do, named idem.Do, saying how it
// answered, the attempt's token and whether its outcome was recorded, with
// each store call an event; only the key's hash under the secret, never
// the key.
func TestEndToEndSpans(t *testing.T) {
	w := newWorld(t)
	w.run(t)
	spans := w.spans.Ended()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4 (one per Do)", len(spans))
	}
	executed := attrsOf(spans[0].Attributes())["idem.token"]
	unknown := attrsOf(spans[3].Attributes())["idem.token"]
	if executed == "" || unknown == "" || executed == unknown {
		t.Fatalf("the two attempts' tokens: %q and %q", executed, unknown)
	}
	want := []struct {
		answer, token, recorded string
		status                  codes.Code
		events                  []string // event:decision of each store call
	}{
		{"executed", executed, "true", codes.Unset, []string{"reserve:execute", "complete:completed"}},
		{"replayed", executed, "", codes.Unset, []string{"reserve:replay"}},
		{"key_misuse", "", "", codes.Unset, []string{"reserve:mismatch"}},
		{"outcome_unknown", unknown, "true", codes.Error, []string{"reserve:execute", "mark_unknown:marked_unknown", "exception"}},
	}
	for i, s := range spans {
		a := attrsOf(s.Attributes())
		for k, v := range a {
			if !spanKeys[k] {
				t.Errorf("span %d carries %s", i, k)
			}
			noIdentity(t, "a span", v)
		}
		wt := want[i]
		if s.Name() != idemotel.SpanName || a["idem.answer"] != wt.answer || a["idem.token"] != wt.token || a["idem.recorded"] != wt.recorded || s.Status().Code != wt.status {
			t.Errorf("span %d: %s %v status %v, want %+v", i, s.Name(), a, s.Status(), wt)
		}
		if a["idem.use_case"] != useCase || a["idem.key_hash"] != idem.KeyHash(secret, req(keyOf(i), "").Scope) {
			t.Errorf("span %d: use case %q, key hash %q", i, a["idem.use_case"], a["idem.key_hash"])
		}
		checkEvents(t, i, s, wt.events)
	}
}

func keyOf(span int) string {
	if span == 3 {
		return keyLost
	}
	return keyDone
}

func checkEvents(t *testing.T, i int, s sdktrace.ReadOnlySpan, want []string) {
	t.Helper()
	var got []string
	for _, e := range s.Events() {
		a := attrsOf(e.Attributes)
		for k, v := range a {
			if !spanKeys[k] {
				t.Errorf("span %d's event carries %s", i, k)
			}
			noIdentity(t, "an event", v)
		}
		switch e.Name {
		case "exception": // RecordError's: the span's status is Error
			got = append(got, e.Name)
		case "idem.store.apply":
			got = append(got, a["idem.event"]+":"+a["idem.decision"])
		default:
			t.Errorf("span %d: event %s", i, e.Name)
		}
	}
	if len(got) != len(want) {
		t.Errorf("span %d: events %v, want %v", i, got, want)
		return
	}
	for j := range got {
		if got[j] != want[j] {
			t.Errorf("span %d: events %v, want %v", i, got, want)
		}
	}
}

// TestSpansWithoutKeyHash: without WithKeyHash, a span has no key hash.
func TestSpansWithoutKeyHash(t *testing.T) {
	rec := newRecorder()
	tr := idemotel.NewTracer(rec.provider)
	_, span := tr.StartDo(t.Context(), req(keyDone, "a").Scope)
	span.End(idem.Answered{Answer: "replayed", Token: 9})
	a := attrsOf(rec.spans.Ended()[0].Attributes())
	if _, ok := a["idem.key_hash"]; ok || a["idem.token"] != "9" || a["idem.recorded"] != "" {
		t.Fatalf("%v", a)
	}
}
