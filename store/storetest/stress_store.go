package storetest

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/idemkit/idem/linearizability"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// stressStore has goroutines call the Store methods directly. Most writes are
// what the core would write from the goroutine's last read of the scope
// (often stale by then); the others are edge cases: inserts over a record,
// compare-and-set and delete with a wrong precondition, deletes of a
// deleted record.
func stressStore(ctx context.Context, s store.Store, h *historySpec) (*historyOut, error) {
	rec := linearizability.NewRecorder(s, nil)
	var seen counter
	goAll(h.cfg.goroutines, func(g int, round func()) {
		storeWorker(ctx, rec.Client(g), h, g, h.opsOf(g, h.cfg.operations), &seen, round)
	})
	out := &historyOut{store: rec.StoreHistory()}
	out.summaries = append(out.summaries, "store calls (method ending): "+seen.String(), storeOverlap(out.store))
	return out, nil
}

func storeWorker(ctx context.Context, c store.Store, h *historySpec, g, ops int, seen *counter, round func()) {
	rng := h.rng(g)
	views := map[core.Scope]*store.Snapshot{}
	p := core.PolicyDefault()
	p.LeaseDuration, p.TTL = time.Millisecond, 2*time.Millisecond
	p.ReconcileBackoffBase, p.ReconcileBackoffMax, p.ReconcileAttemptsMax = time.Millisecond, 4*time.Millisecond, 3
	for done := 0; done < ops; done++ { // one store call per iteration
		sc := h.scope(rng, done, ops)
		round()
		cctx, cancel := maybeDeadline(ctx, rng)
		v := views[sc]
		r := rng.IntN(100)
		var next core.Record
		var w core.Write
		write := false
		if v != nil && r >= 30 {
			if r < 85 {
				next, w, write = coreWrite(rng, v, &p)
			}
			if !write {
				// An edge case; one that needs a fresh token loads instead.
				next, w, write = edgeWrite(rng, v, &p)
			}
		}
		if write {
			maybeYield(rng)
			err := doWrite(cctx, c, w, &next, sc)
			seen.add(w.Kind.String() + " " + linearizability.EndingOf(err).String())
			if err != nil {
				delete(views, sc)
			} else {
				v.Record = next
				if w.Kind == core.WriteInsert || next.Token == v.FreshToken {
					v.FreshToken = 0 // used: the next reserve needs another
				}
			}
		} else {
			snap, err := c.Load(cctx, sc)
			if err != nil {
				seen.add("load failed")
				delete(views, sc)
			} else {
				seen.add("load ok")
				views[sc] = &snap
			}
		}
		cancel()
	}
}

// coreWrite is the write core.Step makes of a random event on the view's
// record, at the view's time or a little later (so that leases and TTLs
// run out); false when the event writes nothing.
func coreWrite(rng *rand.Rand, v *store.Snapshot, p *core.Policy) (core.Record, core.Write, bool) {
	pol := *p
	if rng.IntN(3) == 0 {
		pol.Fail = core.FailEvict
	}
	if rng.IntN(2) == 0 {
		pol.Expiry = core.ExpiryHard
	}
	ev := randomEvent(rng, v.Record.Token, v.FreshToken)
	ev.Now = v.Now.Add(time.Duration(rng.IntN(3000)) * time.Microsecond)
	next := v.Record
	res, err := core.Step(&next, &ev, &pol)
	if err != nil || res.Write.Kind == core.WriteNone {
		return core.Record{}, core.Write{}, false
	}
	return next, res.Write, true
}

// edgeWrite is a write meant to test a precondition: an insert over
// whatever is there, a compare-and-set on a stale version or a foreign
// token, a delete of what may be gone already.
func edgeWrite(rng *rand.Rand, v *store.Snapshot, p *core.Policy) (core.Record, core.Write, bool) {
	cur := v.Record
	switch rng.IntN(3) {
	case 0:
		if v.FreshToken == 0 {
			return core.Record{}, core.Write{}, false
		}
		next := core.Record{Scope: cur.Scope}
		ev := core.Event{Kind: core.EventReserve, Now: v.Now, Fingerprint: fpA, Token: v.FreshToken}
		if _, err := core.Step(&next, &ev, p); err != nil {
			panic(err) // an absent record always reserves
		}
		return next, core.Write{Kind: core.WriteInsert}, true
	case 1:
		next := cur
		if !next.Exists() {
			next = core.Record{Scope: cur.Scope, Status: core.StatusInProgress, Fingerprint: fpA, Token: max(v.FreshToken, 1), CreatedAt: v.Now, LockedUntil: v.Now.Add(p.LeaseDuration)}
		}
		w := core.Write{Kind: core.WriteUpdate, ExpectVersion: cur.Version, ExpectToken: cur.Token}
		switch rng.IntN(3) {
		case 0:
			w.ExpectVersion++
		case 1:
			w.ExpectVersion = max(w.ExpectVersion, 1) - 1
		default:
			w.ExpectToken++
		}
		next.Version = w.ExpectVersion + 1
		next.LastErrorCode = "edge_case"
		return next, w, true
	default:
		w := core.Write{Kind: core.WriteDelete, ExpectVersion: cur.Version, ExpectToken: cur.Token}
		if rng.IntN(2) == 0 && w.ExpectVersion > 1 {
			w.ExpectVersion--
		}
		return core.Record{Scope: cur.Scope}, w, true
	}
}

// doWrite performs w with next as the record to store.
func doWrite(ctx context.Context, c store.Store, w core.Write, next *core.Record, sc core.Scope) error {
	switch w.Kind {
	case core.WriteInsert:
		return c.Insert(ctx, next)
	case core.WriteUpdate:
		return c.CompareAndSet(ctx, next, w.ExpectVersion, w.ExpectToken)
	case core.WriteDelete:
		err := c.Delete(ctx, sc, w.ExpectVersion, w.ExpectToken)
		if err == nil {
			*next = core.Record{Scope: sc}
		}
		return err
	}
	return nil
}
