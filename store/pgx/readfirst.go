package pgxstore

import (
	"math/rand/v2"
	"sync/atomic"
)

// A reserve reaches the record by one of two statements, and which is
// cheaper depends on the traffic. The insert-or-read (reserveSQL) is one
// round trip whatever it finds, but PostgreSQL runs it as an INSERT even
// when the record exists (the executor opens and locks the table's
// indexes for it, the CTE's row is materialised), and the client encodes
// and sends the 25 arguments of the record it would insert: at 16 clients
// a replay by it runs at 0.55-0.6 of one by a plain read (BENCHMARKS.md,
// issue 25). The read (readSQL: four arguments, one index probe) makes a
// replay the cheapest statement there is, and costs a new key one more
// round trip (the read finds nothing, then the insert-or-read runs).
//
// So by default the driver watches what its reserves find and reads first
// while most of them find a record: traffic of new keys never pays for a
// read, traffic of retries never pays for an insert. The share is the
// driver's only state, shared by its connections; it decides which
// statement runs, never what is written: both ways end in core.Step and
// the same checks (apply.go), and both are the conformance suite's.

// readFirstMode is how a Store picks its reserve's first statement.
type readFirstMode uint8

const (
	readFirstAdaptive readFirstMode = iota // the default: by foundShare
	readFirstAlways                        // Options.ReadFirst
	readFirstNever                         // the default before issue 25: the benchmarks' "before"
	readFirstRandom                        // a coin each reserve: tests, so that one history takes both ways
)

// foundShare estimates the share of recent reserves that found a record,
// in units of 1/foundOne: an exponentially weighted average over about the
// last foundWindow reserves. Updates are a load and a store, not a
// compare-and-swap: a concurrent update may be lost, which only delays the
// estimate by one sample, and no reserve waits on another for it.
type foundShare struct{ v atomic.Int32 }

const (
	foundOne    = 1 << 16
	foundWindow = 32
	// readFirstAbove is the share above which reading first is cheaper.
	// By throughput alone the break-even is where a plain read costs what
	// the insert-or-read saves on the share that finds a record: about
	// 0.6 here. A miss also costs a round trip of latency, which a hit
	// does not win back (it saves server time, not a trip), so the switch
	// sits higher: three reserves in four finding their record.
	readFirstAbove = foundOne * 3 / 4
)

func (f *foundShare) observe(found bool) {
	target := int32(0)
	if found {
		target = foundOne
	}
	old := f.v.Load()
	f.v.Store(old + (target-old)/foundWindow)
}

func (f *foundShare) high() bool { return f.v.Load() > readFirstAbove }

// readsFirst says whether the next reserve reads first.
func (s *Store) readsFirst() bool {
	switch s.readFirst {
	case readFirstAlways:
		return true
	case readFirstNever:
		return false
	case readFirstRandom:
		return rand.N(2) == 0
	}
	return s.found.high()
}

// observeReserve records whether a reserve found a record, for the
// adaptive choice only (the other modes ignore it, and a write to a shared
// cache line per reserve is not free).
func (s *Store) observeReserve(found bool) {
	if s.readFirst == readFirstAdaptive {
		s.found.observe(found)
	}
}
