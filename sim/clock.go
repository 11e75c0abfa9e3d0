package sim

import (
	"math/rand/v2"
	"time"

	"github.com/idemkit/idem/core"
)

// storeClock is the store's clock: the world's, less a skew that
// FaultStoreClockBack steps make grow, truncated to the grain the store
// keeps time in. Each seed draws both:
//
//   - the grain: none (nanoseconds), a millisecond or a second, as
//     databases truncate timestamps. With a coarse grain, leases, TTLs and
//     due times land on the same instant as the calls that test them, so
//     every "at exactly locked_until" or "at exactly expires_at" boundary
//     of SPEC §5 is met many times a run;
//   - the steps back: small (up to 100 ms at a step, 250 ms in all, a
//     database clock slewed), or large (up to half a lease at a step and in
//     all, then corrected forward again: more than a heartbeat interval, so
//     that a beat can come at an earlier store time than the one before).
//
// The store is never ahead of the world: the gateway judges an attempt's
// deadline (a lease end, on the store's clock) by the world's clock, and a
// store behind it only makes the gateway reject earlier than the store's
// lease ends. Truncation keeps it behind too. But a store behind by most of
// a lease would leave an attempt no time at all before its deadline, and
// nothing would ever execute: grain and skew stay under 3/4 of the lease.
type storeClock struct {
	grain   int64 // the store's time is a multiple of it (0: none)
	stepMax int64 // the largest step back
	skewMax int64 // how far behind the world's it may fall
	large   bool  // at skewMax, the next step corrects it forward to the world's
	skew    int64 // how far behind the world's clock it is now
	last    int64 // the store time read last (a Due's now)
}

func (c *storeClock) draw(r *rand.Rand, p *core.Policy) {
	lease := int64(p.LeaseDuration)
	c.stepMax, c.skewMax = int64(100*time.Millisecond), int64(250*time.Millisecond)
	if r.IntN(2) == 0 {
		c.large = true
		c.stepMax, c.skewMax = lease/2, lease/2
	}
	// A grain and a skew that add up to most of a lease would leave an
	// attempt no time before its deadline: the grains that do are not
	// drawn (a second only with the longer leases and small steps).
	grains := []int64{0, int64(time.Millisecond), int64(time.Second)}
	for len(grains) > 1 && grains[len(grains)-1]+c.skewMax > lease*3/4 {
		grains = grains[:len(grains)-1]
	}
	c.grain = grains[r.IntN(len(grains))]
}

// storeTime is the store's clock now (memstore.Options.Clock).
func (w *world) storeTime() time.Time {
	c := &w.storeClock
	if (c.large || c.skew < c.skewMax) && w.fault(FaultStoreClockBack, w.rng.store) {
		if c.skew < c.skewMax {
			c.skew = min(c.skewMax, c.skew+1+w.rng.store.Int64N(c.stepMax))
		} else {
			c.skew = 0
		}
	}
	now := w.now - c.skew
	if c.grain > 0 {
		r := now % c.grain
		if r < 0 {
			r += c.grain
		}
		now -= r
	}
	c.last = now
	return epoch.Add(time.Duration(now))
}
