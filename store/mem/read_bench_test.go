package memstore_test

import (
	"context"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	memstore "github.com/idemkit/idem/store/mem"
)

func BenchmarkApplyReplay(b *testing.B) {
	m := memstore.New(memstore.Options{})
	p := idem.DefaultPolicy()
	ctx := context.Background()
	sc := scopeN(0)
	lifecycle(b, m, &p, sc, response(1), new(idem.Applied), false)
	ev := core.Event{Kind: core.EventReserve, Fingerprint: fp}
	var a idem.Applied
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Apply(ctx, sc, ev, &p, &a); err != nil || a.Result.Decision.Kind != core.DecisionReplay {
			b.Fatal()
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	m := memstore.New(memstore.Options{})
	p := idem.DefaultPolicy()
	ctx := context.Background()
	sc := scopeN(0)
	lifecycle(b, m, &p, sc, response(1), new(idem.Applied), false)
	b.ReportAllocs()
	for b.Loop() {
		if snap, err := m.Load(ctx, sc); err != nil || snap.Record.Status != core.StatusCompleted {
			b.Fatal(snap.Record.Status, err)
		}
	}
}
