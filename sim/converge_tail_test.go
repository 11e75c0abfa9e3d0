package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestConvergeTailKeepsTheSummary: reports trimmed by the tail, as RunSeeds
// trims them, give the summary the same maximum and 99th percentile as
// every time kept, whatever the seeds' sizes and ties, while holding a
// fraction of the times.
func TestConvergeTailKeepsTheSummary(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		seeds, requests := 1+r.IntN(60), 1+r.IntN(300)
		whole := make([]*Report, seeds)
		trimmed := make([]*Report, seeds)
		tail := newConvergeTail(seeds * requests)
		kept := 0
		for i := range seeds {
			times := make([]int64, r.IntN(requests+1)) // some requests never answered
			spread := int64(1 + r.IntN(50))            // few distinct values: ties
			if trial%2 == 1 {
				spread += int64(i * 10) // later seeds converge slower: the tail comes from the seeds trimmed hardest
			}
			for j := range times {
				times[j] = r.Int64N(spread) * int64(1+r.IntN(3))
			}
			slices.Sort(times)
			whole[i] = &Report{converge: slices.Clone(times), convergeCount: len(times)}
			trimmed[i] = &Report{converge: times, convergeCount: len(times)}
			tail.trim(trimmed[i])
			kept += len(trimmed[i].converge)
		}
		want, got := Summarize(whole), Summarize(trimmed)
		if got.ConvergeMax != want.ConvergeMax || got.ConvergeP99 != want.ConvergeP99 {
			t.Fatalf("trial %d (%d seeds of up to %d): trimmed max %d p99 %d, want %d %d",
				trial, seeds, requests, got.ConvergeMax, got.ConvergeP99, want.ConvergeMax, want.ConvergeP99)
		}
	}
	// A run of many seeds keeps about the tail, not every time.
	tail := newConvergeTail(1000 * 1000)
	kept := 0
	for range 1000 {
		times := make([]int64, 1000)
		for j := range times {
			times[j] = r.Int64N(1e9)
		}
		slices.Sort(times)
		rep := &Report{converge: times, convergeCount: len(times)}
		tail.trim(rep)
		kept += len(rep.converge)
	}
	if kept > 100000 {
		t.Fatalf("1,000 seeds of 1,000 times kept %d of them", kept)
	}
}
