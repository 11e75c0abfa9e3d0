package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/idemkit/idem/core"
)

// TestWorldCheckersCatchPlantedBugs plants, one at a time, a bug of the kind
// the world's coarse clocks, real payloads and bad input are there to
// expose, and expects one of the invariants meant for it: a checker that
// never fires proves nothing. The core's bugs are planted through
// Config.Step, as another build of the core would be.
func TestWorldCheckersCatchPlantedBugs(t *testing.T) {
	for _, c := range []struct {
		name       string
		step       func(rec *core.Record, ev *core.Event, p *core.Policy) (core.Transition, error)
		plant      plantedBugs
		invariants []int
	}{
		{
			name: "a lease is still held at the instant it ends",
			step: func(rec *core.Record, ev *core.Event, p *core.Policy) (core.Transition, error) {
				if ev.Kind == core.EventReserve && rec.Status == core.StatusInProgress && ev.Fingerprint == rec.Fingerprint && ev.Now.Equal(rec.LockedUntil) {
					return core.Transition{Decision: core.Decision{Kind: core.DecisionInFlight, RetryAfter: p.RetryAfter}}, nil
				}
				return core.Step(rec, ev, p)
			},
			invariants: []int{invTime, invLifecycle},
		},
		{
			name: "a heartbeat sets the lease to now + lease, shorter or not",
			step: func(rec *core.Record, ev *core.Event, p *core.Policy) (core.Transition, error) {
				before := rec.LockedUntil
				tr, err := core.Step(rec, ev, p)
				if err == nil && tr.Decision.Kind == core.DecisionExtended && before.After(ev.Now.Add(p.LeaseDuration)) {
					rec.LockedUntil = ev.Now.Add(p.LeaseDuration)
				}
				return tr, err
			},
			invariants: []int{4, invTime, invLifecycle},
		},
		{
			name:       "servers fingerprint every payload as if under one use case",
			plant:      plantedBugs{fingerprintOneUseCase: true},
			invariants: []int{3},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			caught := false
			for seed := uint64(1); seed <= 200 && !caught; seed++ {
				cfg := ConfigDefault()
				cfg.Seed, cfg.LinCheck = seed, false
				cfg.Step = c.step
				for _, v := range runPlanted(cfg, c.plant) {
					ok := false
					for _, inv := range c.invariants {
						ok = ok || v.Invariant == inv
					}
					if !ok {
						t.Fatalf("seed %d broke invariant %d instead: %s", seed, v.Invariant, v.Detail)
					}
					caught = true
					t.Logf("invariant %d caught at seed %d: %s", v.Invariant, seed, v.Detail)
				}
			}
			if !caught {
				t.Errorf("invariants %v never reported in 200 seeds", c.invariants)
			}
		})
	}
}

// TestReferenceFingerprint: the checker's own pre-image agrees with package
// fingerprint on every way a client writes a payload (member order, white
// space, escapes, the excluded timestamp), and tells the requests it must
// tell apart.
func TestReferenceFingerprint(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		var ps payloadSpace
		ps.init(r)
		for range 50 {
			v := ps.draw(r)
			u, ver := r.IntN(len(useCases)), r.IntN(len(schemaVersions))
			want := ps.refFingerprint(&v, useCases[u], schemaVersions[ver])
			for range 3 {
				body := render(nil, &v, r.Int64(), r)
				got, err := ps.specs[u][ver].Of(body)
				if err != nil {
					t.Fatalf("%s: %v", body, err)
				}
				if got != want {
					t.Fatalf("include=%v %s: package fingerprint %v, reference %v", ps.include, body, got.Short(), want.Short())
				}
			}
			if other := ps.refFingerprint(&v, useCases[1-u], schemaVersions[ver]); other == want {
				t.Fatal("another use case, the same fingerprint")
			}
			if other := ps.refFingerprint(&v, useCases[u], schemaVersions[1-ver]); other == want {
				t.Fatal("another schema version, the same fingerprint")
			}
		}
	}
	// Names whose UTF-16 order is not their UTF-8 order.
	if compareUTF16("\U0001F600", "\uFB01") >= 0 || compareUTF16("\uFB01", "\U0001F600") <= 0 || compareUTF16("a", "ab") >= 0 {
		t.Fatal("compareUTF16 does not order by UTF-16 code units")
	}
}

// TestFingerprintRulesFire: two different requests sharing a fingerprint
// break domain separation (invariant 3), and a Mismatch on a key that only
// ever carried one payload breaks convergence (invariant 6).
func TestFingerprintRulesFire(t *testing.T) {
	newChecker := func() *world {
		w := newWorld(ConfigDefault(), false)
		w.start()
		return w
	}
	w := newChecker()
	a, b := w.clients[0].makeRequest(), w.clients[1].makeRequest()
	if a.fp == b.fp {
		b.body.members[0].value = jsonInt(a.amount + 1)
		b.fp = w.payloads.refFingerprint(&b.body, useCases[b.useCase], schemaVersions[b.version])
	}
	w.check.fingerprint(a, a.fp)
	w.check.fingerprint(b, a.fp) // b computed a's fingerprint
	if len(w.report.Violations) != 1 || w.report.Violations[0].Invariant != 3 {
		t.Fatalf("a shared fingerprint: %+v", w.report.Violations)
	}

	w = newChecker()
	a = w.clients[0].makeRequest()
	w.check.answer(a, &answer{status: 422, definitive: true})
	if len(w.report.Violations) != 1 || w.report.Violations[0].Invariant != 6 {
		t.Fatalf("a Mismatch on a key of one payload: %+v", w.report.Violations)
	}
}

// runPlanted runs cfg with plant, traced, and returns its violations.
func runPlanted(cfg Config, plant plantedBugs) []Violation {
	w := newWorld(cfg, true)
	w.plant = plant
	w.start()
	w.loop()
	w.finish()
	return w.report.Violations
}
