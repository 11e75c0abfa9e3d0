package pgxstore

import (
	"context"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

var testFP = core.Fingerprint{0x42, 1, 2, 3}

func testScope(key string) core.Scope {
	return core.Scope{Tenant: "t", Principal: "p", UseCase: "payments.create", Key: key + "-0123456789abcdef"}
}

// TestRoundTrips counts the statements each path sends, with a tracer on
// the pool (the listener's connection is not traced: it is no request's).
func TestRoundTrips(t *testing.T) {
	db := newTestDB(t)
	s := db.newStore(t, Options{})
	ctx := context.Background()
	ex, err := idem.New(s)
	if err != nil {
		t.Fatal(err)
	}
	resp := idem.Response{StatusCode: 201, Body: []byte(`{"id":1}`)}
	action := func(context.Context, idem.Attempt) (idem.Response, error) { return resp, nil }
	count := func(name string, want int64, f func()) {
		t.Helper()
		before := db.trips.n.Load()
		f()
		if got := db.trips.n.Load() - before; got != want {
			t.Errorf("%s: %d round trips, want %d", name, got, want)
		}
	}
	req := idem.Request{Scope: testScope("rt-new"), Fingerprint: testFP}
	count("new key through Executor.Do (reserve 1 + completion 1)", 2, func() {
		r, err := ex.Do(ctx, req, action)
		if err != nil || r.Kind != idem.ResultExecuted || !r.Recorded {
			t.Fatalf("Do: %+v, %v", r, err)
		}
	})
	count("replay of a completed key, while the Store sees new keys (the plain insert finds it, then a read)", 2, func() {
		r, err := ex.Do(ctx, req, action)
		if err != nil || r.Kind != idem.ResultReplayed || !r.Response.Equal(resp) {
			t.Fatalf("replay: %+v, %v", r, err)
		}
	})
	p := core.PolicyDefault()
	var a store.Applied
	sc := testScope("rt-steps")
	count("reserve of a new key", 1, func() {
		if err := store.Apply(ctx, s, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP}, &p, &a); err != nil {
			t.Fatal(err)
		}
	})
	held := a.Record
	count("reserve of a key in flight (insert, then read)", 2, func() {
		if err := store.Apply(ctx, s, sc, core.Event{Kind: core.EventReserve, Fingerprint: testFP}, &p, &a); err != nil || a.Transition.Decision.Kind != core.DecisionInFlight {
			t.Fatalf("%v %v", a.Transition.Decision.Kind, err)
		}
	})
	if err := store.Apply(ctx, s, sc, core.Event{Kind: core.EventHeartbeat, Token: held.Token}, &p, &a); err != nil {
		t.Fatal(err)
	}
	count("completion over a held record a heartbeat moved on (the refused precondition: load and write, 2 more)", 3, func() {
		err := store.ApplyHeld(ctx, s, &held, core.Event{Kind: core.EventComplete, Token: held.Token, Response: resp}, &p, &a)
		if err != nil || a.Transition.Decision.Kind != core.DecisionCompleted {
			t.Fatalf("%v %v", a.Transition.Decision.Kind, err)
		}
	})
	rf := db.newStore(t, Options{Table: "read_first", ReadFirst: true})
	exRF, err := idem.New(rf)
	if err != nil {
		t.Fatal(err)
	}
	reqRF := idem.Request{Scope: testScope("rt-read-first"), Fingerprint: testFP}
	count("ReadFirst: new key (read 1 + reserve 1 + completion 1)", 3, func() {
		r, err := exRF.Do(ctx, reqRF, action)
		if err != nil || r.Kind != idem.ResultExecuted || !r.Recorded {
			t.Fatalf("Do: %+v, %v", r, err)
		}
	})
	count("ReadFirst: replay of a completed key (one plain read)", 1, func() {
		r, err := exRF.Do(ctx, reqRF, action)
		if err != nil || r.Kind != idem.ResultReplayed || !r.Response.Equal(resp) {
			t.Fatalf("replay: %+v, %v", r, err)
		}
	})
	count("a stale completion (refused, nothing to write)", 1, func() {
		stale := held
		stale.Version = 1
		err := store.ApplyHeld(ctx, s, &stale, core.Event{Kind: core.EventComplete, Token: held.Token + 1000, Response: resp}, &p, &a)
		if err != nil || a.Transition.Decision.Kind != core.DecisionStale {
			t.Fatalf("%v %v", a.Transition.Decision.Kind, err)
		}
	})
}
