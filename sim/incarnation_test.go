package sim

import (
	"testing"
	"time"

	"github.com/idemkit/idem/core"
)

// TestIncarnationsAreNotTheirCreatedAt: a key's new life that gets the
// CreatedAt of the one before (a zombie's insert carries the time it loaded
// at; a coarse store clock) is still a new life: an execution in it after
// an execution in the old one is a retry past the TTL, not a second charge.
// Executions within one life (a failed_retryable record run again) are
// still held to one effect.
func TestIncarnationsAreNotTheirCreatedAt(t *testing.T) {
	created := time.Unix(1000, 0)
	run := func(t *testing.T, bChargesToo bool) []Violation {
		cfg := ConfigDefault()
		cfg.Requests = 4
		w := newWorld(cfg, false)
		scope := core.Scope{Tenant: "acme", Principal: "client-0", UseCase: "payments.create", Key: "550e8400-e29b-41d4-a716-446655440000"}
		w.scopes, w.shadow = append(w.scopes[:0], scope), append(w.shadow[:0], core.Record{})
		c := &w.check
		req := &request{id: 0, scope: 0, payload: 1}
		absent := core.Record{}
		write := func(prev, rec core.Record, kind core.WriteKind) {
			var expect core.Token
			if kind != core.WriteInsert {
				expect = prev.Token
			}
			rec.Scope = scope
			c.write(opMeta{}, 0, &prev, &rec, kind, expect)
		}
		// Life 1: attempt 10 executes and charges.
		a := core.Record{Status: core.StatusInProgress, Token: 10, Version: 1, CreatedAt: created}
		write(absent, a, core.WriteInsert)
		c.charge(req, 10, &charge{id: 1, payload: 1})
		// Its record is deleted; a zombie's insert (attempt 20) begins life 2
		// with the same CreatedAt, and fails without an effect unless told.
		b := core.Record{Status: core.StatusInProgress, Token: 20, Version: 1, CreatedAt: created}
		write(absent, b, core.WriteInsert)
		if bChargesToo {
			c.charge(req, 20, &charge{id: 2, payload: 1})
		}
		failed := b
		failed.Status, failed.Version = core.StatusFailedRetryable, 2
		write(b, failed, core.WriteUpdate)
		// Attempt 30 runs the failed_retryable record again: life 2 still.
		again := failed
		again.Status, again.Token, again.Version = core.StatusInProgress, 30, 3
		write(failed, again, core.WriteUpdate)
		c.charge(req, 30, &charge{id: 3, payload: 1})
		return w.report.Violations
	}
	if vs := run(t, false); len(vs) != 0 {
		t.Fatalf("a new life with an old CreatedAt was taken for the old one: %+v", vs)
	}
	if vs := run(t, true); len(vs) != 1 || vs[0].Invariant != 1 {
		t.Fatalf("two effects in one life (a failed_retryable record run again after an effect): violations %+v, want invariant 1", vs)
	}
}
