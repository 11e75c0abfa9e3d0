package sim

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
)

// plantedStep is core.Step with one bug planted after it: a faulty core,
// run by the memory store, the servers and the workers alike
// (Config.Step), as a mutant of package core would be.
type plantedStep func(before, rec *core.Record, ev *core.Event, p *core.Policy, tr *core.Transition)

func (plant plantedStep) step(rec *core.Record, ev *core.Event, p *core.Policy) (core.Transition, error) {
	before := *rec
	tr, err := core.Step(rec, ev, p)
	if err == nil {
		plant(&before, rec, ev, p, &tr)
	}
	return tr, err
}

// TestLifecycleCheckerCatchesPlantedBugs plants, one at a time, a bug in
// the core that no other checker sees (the outcome still converges) and
// expects the lifecycle checker (invariant 8) to report it: its reference
// of each rule is its own, so a core that is wrong does not make it wrong.
func TestLifecycleCheckerCatchesPlantedBugs(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant plantedStep
		slow  bool // slow gateway answers: most attempts beat
	}{
		{"an update keeps the version", func(_, rec *core.Record, _ *core.Event, _ *core.Policy, tr *core.Transition) {
			if tr.Write.Kind == core.WriteUpdate {
				rec.Version = tr.Write.ExpectVersion
			}
		}, false},
		{"an update bumps the version by two", func(_, rec *core.Record, _ *core.Event, _ *core.Policy, tr *core.Transition) {
			if tr.Write.Kind == core.WriteUpdate {
				rec.Version = tr.Write.ExpectVersion + 2
			}
		}, false},
		{"fail keeps a record the policy evicts, and evicts one it keeps", func(before, rec *core.Record, ev *core.Event, p *core.Policy, tr *core.Transition) {
			if ev.Kind != core.EventFail || tr.Decision.Kind != core.DecisionFailed {
				return
			}
			if p.Fail == core.FailKeep {
				tr.Write = core.Write{Kind: core.WriteDelete, ExpectVersion: before.Version, ExpectToken: before.Token}
				*rec = core.Record{Scope: rec.Scope}
				return
			}
			*rec = *before
			rec.Status, rec.Version = core.StatusFailedRetryable, before.Version+1
			rec.ExpiresAt = ev.Now.Add(p.TTL)
			tr.Write = core.Write{Kind: core.WriteUpdate, ExpectVersion: before.Version, ExpectToken: before.Token}
		}, false},
		{"a tombstone keeps its response", func(before, rec *core.Record, ev *core.Event, _ *core.Policy, tr *core.Transition) {
			if ev.Kind == core.EventSweep && rec.Status == core.StatusExpired && tr.Write.Kind == core.WriteUpdate {
				rec.Response = before.Response
			}
		}, false},
		{"the reconcile backoff is one base too long", func(_, rec *core.Record, ev *core.Event, p *core.Policy, tr *core.Transition) {
			if ev.Kind == core.EventResolve && tr.Decision.Kind == core.DecisionRescheduled {
				rec.ReconcileAfter = rec.ReconcileAfter.Add(p.ReconcileBackoffBase)
			}
		}, false},
		{"the same completion again is answered conflict", func(_, _ *core.Record, ev *core.Event, _ *core.Policy, tr *core.Transition) {
			if ev.Kind == core.EventComplete && tr.Decision.Kind == core.DecisionAcknowledged {
				tr.Decision.Kind = core.DecisionConflict
			}
		}, false},
		{"a heartbeat extends the lease by two leases", func(_, rec *core.Record, ev *core.Event, p *core.Policy, tr *core.Transition) {
			if ev.Kind == core.EventHeartbeat && tr.Decision.Kind == core.DecisionExtended {
				rec.LockedUntil = ev.Now.Add(2 * p.LeaseDuration)
			}
		}, true},
		{"a heartbeat answers extended without extending", func(before, rec *core.Record, ev *core.Event, _ *core.Policy, tr *core.Transition) {
			if ev.Kind == core.EventHeartbeat && tr.Decision.Kind == core.DecisionExtended {
				rec.LockedUntil = before.LockedUntil
			}
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := ConfigDefault()
			cfg.LinCheck = false
			cfg.Step = c.plant.step
			if c.slow {
				cfg.GatewayLatencyMin, cfg.GatewayLatencyMax, cfg.GatewayTimeout = 400*time.Millisecond, 900*time.Millisecond, time.Second
			}
			for seed := uint64(1); seed <= 100; seed++ {
				cfg.Seed = seed
				r, err := Run(cfg)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range r.Violations {
					if v.Invariant != invLifecycle {
						t.Fatalf("seed %d broke invariant %d (%s) first: %s", seed, v.Invariant, v.Name, v.Detail)
					}
					t.Logf("caught at seed %d: %s", seed, v.Detail)
					return
				}
			}
			t.Fatal("not caught in 100 seeds")
		})
	}
}

// epochForZero is a broken memory store: a zero time reads back as the
// Unix epoch (the bug of a driver that stores unset times as 0).
type epochForZero struct{ *memstore.Store }

func (s epochForZero) Load(ctx context.Context, scope core.Scope) (store.Snapshot, error) {
	snap, err := s.Store.Load(ctx, scope)
	for _, t := range []*time.Time{&snap.Record.LockedUntil, &snap.Record.ReconcileAfter, &snap.Record.CompletedAt} {
		if snap.Record.Exists() && t.IsZero() {
			*t = time.Unix(0, 0).UTC()
		}
	}
	return snap, err
}

// TestStoreReadsBackAsWritten: a store whose reads differ from what was
// written is reported (invariant 0) at the first such read, though no
// other checker sees anything wrong for a while.
func TestStoreReadsBackAsWritten(t *testing.T) {
	cfg := ConfigDefault()
	cfg.LinCheck = false
	cfg.StorePath = StorePathCompareAndSet
	w := newWorld(cfg, true)
	w.store.inner = epochForZero{w.mem}
	w.start()
	w.loop()
	w.finish()
	if len(w.report.Violations) == 0 || w.report.Violations[0].Invariant != 0 {
		t.Fatalf("violations %+v, want invariant 0 first", w.report.Violations)
	}
	t.Log(w.report.Violations[0].Detail)
}
