package pgxstore

import (
	"math/rand/v2"
	"sync/atomic"
)

// A reserve reaches the record by one of three statements, and which is
// cheapest depends on the traffic. The insert-or-read (reserveSQL) is one
// round trip whatever it finds, but PostgreSQL runs it as an INSERT even
// when the record exists (the executor opens and locks the table's
// indexes for it, the CTE's row is materialised), and the client encodes
// and sends the 25 arguments of the record it would insert: at 16 clients
// a replay by it runs at 0.55-0.6 of one by a plain read (BENCHMARKS.md,
// issue 25). The read (readSQL: four arguments, one index probe) makes a
// replay the cheapest statement there is, and costs a new key one more
// round trip (the read finds nothing, then the insert-or-read runs). The
// plain insert (insertNewSQL) makes a new key the cheapest write there is
// (the CTE's read and union are a plan of their own to set up on every
// call: about a tenth of a new key's work on the server, issue 25 §2); a
// record it finds costs one more round trip (the insert writes nothing,
// then the read runs).
//
// So by default the driver watches what its reserves find: it reads first
// while most of them find a record, inserts first while almost none do,
// and sends the insert-or-read in between, where either guess would often
// cost a round trip. Traffic of new keys never pays for a read or a CTE,
// traffic of retries never pays for an insert. The share is the driver's
// only state, shared by its connections; it decides which statement runs,
// never what is written: every way ends in core.Step and the same checks
// (apply.go), and all are the conformance suite's.

// readFirstMode is how a Store picks its reserve's first statement.
type readFirstMode uint8

const (
	readFirstAdaptive readFirstMode = iota // the default: by foundShare
	readFirstAlways                        // Options.ReadFirst
	readFirstNever                         // the insert-or-read always, the default before issue 25: the benchmarks' "before"
	readFirstRandom                        // a way at random each reserve: tests, so that one history takes every way
	insertFirstAlways                      // the plain insert always: tests and benchmarks
)

// reserveWay is the first statement of a reserve.
type reserveWay uint8

const (
	wayInsertOrRead reserveWay = iota // reserveSQL: one round trip whatever it finds
	wayRead                           // readSQL, then the insert-or-read if there is no record
	wayInsert                         // insertNewSQL, then readSQL if there is a record
	wayCount
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
	// insertFirstBelow is the share below which inserting first is
	// cheaper: the plain insert saves PostgreSQL about a tenth of a new
	// key's work, and each record it finds costs a second round trip, of
	// latency too; so only while fewer than one reserve in eight finds one.
	insertFirstBelow = foundOne / 8
)

func (f *foundShare) observe(found bool) {
	target := int32(0)
	if found {
		target = foundOne
	}
	old := f.v.Load()
	f.v.Store(old + (target-old)/foundWindow)
}

// way is the statement the share makes cheapest.
func (f *foundShare) way() reserveWay {
	switch v := f.v.Load(); {
	case v > readFirstAbove:
		return wayRead
	case v < insertFirstBelow:
		return wayInsert
	}
	return wayInsertOrRead
}

// reserveWay is the first statement of the next reserve.
func (s *Store) reserveWay() reserveWay {
	switch s.readFirst {
	case readFirstAlways:
		return wayRead
	case readFirstNever:
		return wayInsertOrRead
	case insertFirstAlways:
		return wayInsert
	case readFirstRandom:
		return reserveWay(rand.N(int(wayCount)))
	}
	return s.found.way()
}

// observeReserve records whether a reserve found a record, for the
// adaptive choice only (the other modes ignore it, and a write to a shared
// cache line per reserve is not free).
func (s *Store) observeReserve(found bool) {
	if s.readFirst == readFirstAdaptive {
		s.found.observe(found)
	}
}
