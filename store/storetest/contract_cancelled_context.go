package storetest

import (
	"context"
	"testing"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// cancelledContext: every method refuses a context already cancelled,
// so that a caller that gave up writes nothing after it did.
func (c *contract) cancelledContext(t *testing.T) {
	s := c.newStore(t)
	sc := c.scope(t, 0)
	snap := load(t, s, sc)
	rec := sample(sc, snap.Now, snap.FreshToken, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Load(ctx, sc); err == nil {
		t.Error("Load with a cancelled context succeeded")
	}
	if err := s.Insert(ctx, &rec); err == nil {
		t.Error("Insert with a cancelled context succeeded")
	}
	if err := s.CompareAndSet(ctx, &rec, 1, rec.Token); err == nil {
		t.Error("CompareAndSet with a cancelled context succeeded")
	}
	if err := s.Delete(ctx, sc, 1, rec.Token); err == nil {
		t.Error("Delete with a cancelled context succeeded")
	}
	if _, err := s.Due(ctx, store.DueSweep, 10); err == nil {
		t.Error("Due with a cancelled context succeeded")
	}
	if a, ok := s.(store.Applier); ok {
		p := core.PolicyDefault()
		if err := a.Apply(ctx, sc, core.Event{Kind: core.EventReserve, Fingerprint: fpA}, &p, new(store.Applied)); err == nil {
			t.Error("Apply with a cancelled context succeeded")
		}
	}
}
