package sim

import (
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// Report is the outcome of one run.
type Report struct {
	Config Config
	Rates  [faultCount]float64 // each fault's probability in this run (drawn in swarm mode)

	Tally

	ConvergeMax, ConvergeP99 time.Duration // first send to definitive answer, virtual
	VirtualTime              time.Duration
	Converged                bool // everything settled before the deadline
	// HostStall is, in a live run, how long its host did not run it (the
	// stalls a timer measured, live_lag.go), HostStallMax the longest: the
	// real-time bounds were widened by them.
	HostStall, HostStallMax time.Duration
	Counters                []CounterValue // SPEC §7, in order
	Violations              []Violation    // empty when every invariant held
	Events                  []TraceEvent   // the run's trace
	Scopes                  []core.Scope   // scope index -> scope, for Events
	violatingScope          int32
	// converge: each answered request's time to converge, sorted, virtual
	// nanoseconds: all convergeCount of them, or (RunSeeds) only the
	// largest, those the summary's maximum and p99 may be (convergeTail).
	converge      []int64
	convergeCount int
}

// Tally is what a run counts, and a summary adds up.
type Tally struct {
	Requests   int `json:"requests"`         // logical requests sent
	Done       int `json:"done"`             // requests with a definitive answer
	Executions int `json:"executions"`       // actions run (gateway calls)
	Charges    int `json:"charges"`          // real charges in the gateway's ledger
	Declines   int `json:"declines"`         // declined cards (business outcomes)
	Executed   int `json:"executed"`         // answers from the execution itself
	Replays    int `json:"replays"`          // answers replayed from the store
	Status409  int `json:"status_409"`       // in progress or outcome unknown
	Status202  int `json:"status_202"`       // in progress, under the 202 policy
	Status422  int `json:"status_422"`       // key misuse
	Status503  int `json:"status_503"`       // store unavailable (failed closed)
	Status5xx  int `json:"status_5xx_other"` // other server errors (not executed, response invalid)
	LinChecked int `json:"lin_checked"`      // store operations checked for linearizability (-lincheck)
	Abandoned  int `json:"abandoned"`        // unknown records the reconciler gave up on: left to an operator
	// Reincarnated counts requests the gateway processed in a later
	// incarnation of a key that had one already: a retry that came after
	// the key's record expired, which executes afresh by design.
	Reincarnated int `json:"reincarnated"`
}

func (t *Tally) add(o *Tally) {
	t.Requests += o.Requests
	t.Done += o.Done
	t.Executions += o.Executions
	t.Charges += o.Charges
	t.Declines += o.Declines
	t.Executed += o.Executed
	t.Replays += o.Replays
	t.Status409 += o.Status409
	t.Status202 += o.Status202
	t.Status422 += o.Status422
	t.Status503 += o.Status503
	t.Status5xx += o.Status5xx
	t.LinChecked += o.LinChecked
	t.Abandoned += o.Abandoned
	t.Reincarnated += o.Reincarnated
}

// CounterValue is one SPEC §7 counter's total.
type CounterValue struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// ViolatingScope is the index of the scope of the first violation, or -1.
func (r *Report) ViolatingScope() int32 {
	if len(r.Violations) == 0 {
		return -1
	}
	return r.violatingScope
}

func (r *Report) init(w *world) {
	r.Config = w.cfg
	r.Rates = w.rates
	r.violatingScope = -1
}

// reply counts what a server answered.
func (r *Report) reply(a answer) {
	switch {
	case a.definitive && a.status == 422:
		r.Status422++
	case a.definitive && a.kind == idem.ResultReplayed:
		r.Replays++
	case a.definitive:
		r.Executed++
	case a.status == 409:
		r.Status409++
	case a.status == 202:
		r.Status202++
	case a.status == 503:
		r.Status503++
	default:
		r.Status5xx++
	}
}

func (r *Report) finish(w *world) {
	r.Requests = len(w.requests)
	r.VirtualTime = time.Duration(w.now)
	var times []int64
	for _, q := range w.requests {
		if q.done {
			times = append(times, q.doneAt-q.start)
		}
	}
	r.converge, r.convergeCount = times, len(times)
	r.ConvergeMax, r.ConvergeP99 = maxAndP99(times)
	for _, c := range idem.Counters() {
		r.Counters = append(r.Counters, CounterValue{Name: c.Name(), Value: w.metrics.Total(c)})
	}
	r.Events = w.events
	r.Scopes = w.scopes
}
