package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

func BenchmarkApplyReplay(b *testing.B) {
	m := memstore.New(memstore.Options{})
	p := idem.PolicyDefault()
	ctx := context.Background()
	sc := scopeN(0)
	lifecycle(b, m, &p, sc, response(1), new(store.Applied), false)
	ev := core.Event{Kind: core.EventReserve, Fingerprint: fp}
	var a store.Applied
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Apply(ctx, sc, ev, &p, &a); err != nil || a.Transition.Decision.Kind != core.DecisionReplay {
			b.Fatal()
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	m := memstore.New(memstore.Options{})
	p := idem.PolicyDefault()
	ctx := context.Background()
	sc := scopeN(0)
	lifecycle(b, m, &p, sc, response(1), new(store.Applied), false)
	b.ReportAllocs()
	for b.Loop() {
		if snap, err := m.Load(ctx, sc); err != nil || snap.Record.Status != core.StatusCompleted {
			b.Fatal(snap.Record.Status, err)
		}
	}
}

var clockSink time.Time

// BenchmarkStoreClock is one read of a store clock: time.Now, and the wall
// time at start carried forward by the monotonic clock, which is the memory
// store's default (and the floor's).
func BenchmarkStoreClock(b *testing.B) {
	b.Run("time.Now", func(b *testing.B) {
		for b.Loop() {
			clockSink = time.Now()
		}
	})
	b.Run("monotonic", func(b *testing.B) {
		clock := newBenchCase().clock
		for b.Loop() {
			clockSink = clock()
		}
	})
}
