package storetest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/fakeclock"
	"github.com/idemkit/idem/linearizability"
	"github.com/idemkit/idem/store"
)

// contract holds what the functional tests share.
type contract struct {
	cfg      *config
	newStore func(*testing.T) store.Store
	d        linearizability.ModelOptions
}

func runContract(t *testing.T, newStore func(*testing.T) store.Store, cfg *config) {
	c := &contract{cfg: cfg, newStore: newStore, d: linearizability.ModelOptions{TimeResolution: cfg.resolution}}
	t.Run("load-absent", c.loadAbsent)
	t.Run("fresh-tokens", c.freshTokens)
	t.Run("insert-load", c.insertLoad)
	t.Run("insert-existing", c.insertExisting)
	t.Run("compare-and-set", c.compareAndSet)
	t.Run("delete", c.delete)
	t.Run("reinsert-after-delete", c.reinsertAfterDelete)
	t.Run("scopes-sharing-a-key", c.scopesSharingAKey)
	t.Run("tokens-across-scopes", c.tokensAcrossScopes)
	t.Run("tokens-concurrently", c.tokensConcurrently)
	t.Run("reserve-tokens", c.reserveTokens)
	t.Run("deletes-keep-the-others", c.deletesKeepTheOthers)
	t.Run("records-are-copies", c.recordsAreCopies)
	t.Run("applied-responses-are-copies", c.appliedResponsesAreCopies)
	t.Run("accepted-bytes", c.acceptedBytes)
	t.Run("due", c.due)
	t.Run("due-across-kinds", c.dueAcrossKinds)
	t.Run("wait", c.wait)
	t.Run("cancelled-context", c.cancelledContext)
	t.Run("applier", c.applier)
	t.Run("held-applier", c.heldApplier)
	t.Run("scenarios", c.scenarios)
}

// scope is a scope no other test or run uses.
func (c *contract) scope(t *testing.T, i int) core.Scope {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", c.cfg.seed, t.Name())
	return core.Scope{Tenant: "lin", Principal: "contract", UseCase: "lin.contract",
		Key: fmt.Sprintf("%016x-%04d-contract", h.Sum64(), i)}
}

// clock is the store and a way to move its time: the controlled clock if
// the driver gave one, else the store's own clock and real sleeps, with
// leases to match.
func (c *contract) clock(t *testing.T) (s store.Store, advance func(time.Duration), lease time.Duration) {
	if c.cfg.clockStore != nil {
		clk := fakeclock.New()
		return c.cfg.clockStore(t, clk.Now), clk.Advance, 5 * time.Minute
	}
	return c.newStore(t), time.Sleep, c.cfg.realLease
}

// sample is a record with every field set, as the core could have written it.
func sample(sc core.Scope, now time.Time, token core.Token, version uint64) core.Record {
	return core.Record{
		Scope: sc, Status: core.StatusCompleted, Fingerprint: fpA, Token: token, Version: version,
		Response: core.Response{StatusCode: 201, Headers: []core.Header{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Id", Value: "7"}},
			Body: []byte(`{"paymentId":"p-1"}`), SchemaVersion: 3},
		LastErrorCode: "lease_expired", LockedUntil: now.Add(time.Minute), ReconcileAfter: now.Add(2 * time.Minute),
		ReconcileAttempts: 2, CreatedAt: now, CompletedAt: now.Add(time.Second), ExpiresAt: now.Add(time.Hour),
	}
}

func load(t *testing.T, s store.Store, sc core.Scope) store.Snapshot {
	t.Helper()
	snap, err := s.Load(context.Background(), sc)
	if err != nil {
		t.Fatalf("load %s: %v", sc, err)
	}
	if snap.Record.Scope != sc {
		t.Fatalf("load %s returned a record of scope %s", sc, snap.Record.Scope)
	}
	return snap
}

// same fails unless the stored record is want, field by field.
func (c *contract) same(t *testing.T, s store.Store, want core.Record) {
	t.Helper()
	got := load(t, s, want.Scope).Record
	if !c.d.SameRecord(&got, &want) {
		t.Fatalf("stored record differs:\n got  %s\n want %s", got.Describe(), want.Describe())
	}
}

func wantConflict(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("%s: %v, want store.ErrConflict", what, err)
	}
}

func wantOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
