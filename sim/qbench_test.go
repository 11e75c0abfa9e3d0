package sim

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkClock is one schedule and one next with about 600 events
// pending, 4 in 5 near (latencies) and 1 in 5 far (timeouts).
func BenchmarkClock(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	var c clock
	fn := func() {}
	d := func() int64 {
		if r.IntN(5) == 0 {
			return 300_000_000 + r.Int64N(700_000_000)
		}
		return r.Int64N(5_000_000)
	}
	for range 600 {
		c.after(d(), fn)
	}
	for b.Loop() {
		c.next()
		c.after(d(), fn)
	}
}
