package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// Command is the simrun command line that reproduces cfg exactly.
func (c *Config) Command() string {
	var b strings.Builder
	fmt.Fprintf(&b, "simrun -seed %d -requests %d -clients %d -servers %d -baseline %s -faults %s -swarm=%t",
		c.Seed, c.Requests, c.Clients, c.Servers, c.Baseline, c.Faults, c.Swarm)
	if !c.Swarm && c.Faults != 0 {
		fmt.Fprintf(&b, " -fault-rate %g", c.FaultRate[0])
	}
	if c.GatewayIdempotent {
		b.WriteString(" -gateway-idempotent")
	}
	if !c.LinCheck {
		b.WriteString(" -lincheck=false")
	}
	if c.StorePath != StorePathDrawn {
		fmt.Fprintf(&b, " -store-path %v", c.StorePath)
	}
	if !c.DrawLifecycle {
		b.WriteString(" -draw-lifecycle=false")
	}
	if c.StepName == "wasm" {
		b.WriteString(" -wasm-core")
	}
	if c.LiveStore != "" {
		b.WriteString(" -live " + c.LiveStore)
	}
	return b.String()
}

// Describe lists every parameter of a run, one group per line.
func (c *Config) Describe() string {
	p := &c.Lifecycle
	var b strings.Builder
	fmt.Fprintf(&b, "run:        seed=%d requests=%d clients=%d servers=%d baseline=%s faults=%s swarm=%t",
		c.Seed, c.Requests, c.Clients, c.Servers, c.Baseline, c.Faults, c.Swarm)
	if !c.Swarm {
		fmt.Fprintf(&b, " fault_rate=%g", c.FaultRate[0])
	}
	if c.DrawLifecycle {
		b.WriteString("\nlifecycle:  drawn per seed: lease 1-3s, ttl 3s-24h, tombstone retention 1s-1h, expiry soft|hard, fail keep|evict, attempts_max 6|20|1000 (each violation prints its seed's)")
	} else {
		b.WriteString("\nlifecycle:  " + describePolicy(p))
	}
	fmt.Fprintf(&b, "\nnetwork:    latency=%v..%v one way", c.NetLatencyMin, c.NetLatencyMax)
	storeName := "memstore"
	if c.LiveStore != "" {
		storeName = "live " + c.LiveStore + " (its own latency on top)"
	}
	fmt.Fprintf(&b, "\nstore:      %s, latency=%v..%v per call, path=%v", storeName, c.StoreLatencyMin, c.StoreLatencyMax, c.StorePath)
	fmt.Fprintf(&b, "\ngateway:    latency=%v..%v timeout=%v idempotent=%t", c.GatewayLatencyMin, c.GatewayLatencyMax, c.GatewayTimeout, c.GatewayIdempotent)
	fmt.Fprintf(&b, "\nclients:    timeout=%v backoff=%v..%v with full jitter", c.ClientTimeout, c.ClientBackoffBase, c.ClientBackoffMax)
	fmt.Fprintf(&b, "\nservers:    restart_after_crash=%v no_crash_after_restart=%v backlog_when_paused=%d; reconciler every %v, sweeper every %v", c.RestartDelay, c.CrashQuiet, c.BacklogMax, c.ReconcileEvery, c.SweepEvery)
	fmt.Fprintf(&b, "\nphases:     faults for %v of arrivals, then healing", c.Arrival)
	b.WriteString("\nchecks:     SPEC §6 invariants 1-7; SPEC §5 and the drawn policy on every store write (8); bad input rejected (9); time boundaries (10); the executor's contract (11); the §7 counters (12)")
	if c.LinCheck {
		b.WriteString("; the store's history for linearizability (0)")
	}
	return b.String()
}

// describePolicy is the lifecycle policy on one line.
func describePolicy(p *core.Policy) string {
	return fmt.Sprintf("lease=%v ttl=%v tombstone_retention=%v in_flight_wait=%v retry_after=%v reconcile_backoff=%v..%v attempts_max=%d expiry=%v fail=%v in_flight_answer=%v",
		p.LeaseDuration, p.TTL, p.TombstoneRetention, p.InFlightWait, p.RetryAfter, p.ReconcileBackoffBase, p.ReconcileBackoffMax, p.ReconcileAttemptsMax, p.Expiry, p.Fail, p.InFlightAnswer)
}

// describeRates lists the faults that fire in a run and how often.
func describeRates(r *[faultCount]float64) string {
	var parts []string
	for _, f := range Faults() {
		if r[f] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%.2f%%", f, 100*r[f]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// Summary adds up the reports of several seeds.
type Summary struct {
	Seeds  int `json:"seeds"`
	Failed int `json:"failed"` // seeds with a violation
	Tally
	Reconciled  uint64         `json:"reconciled"`
	ConvergeMax time.Duration  `json:"converge_max_ns"` // virtual
	ConvergeP99 time.Duration  `json:"converge_p99_ns"` // virtual
	Counters    []CounterValue `json:"counters"`
}

// Summarize adds up reports.
func Summarize(reports []*Report) Summary {
	var s Summary
	var times []int64
	count := 0
	for _, r := range reports {
		s.Seeds++
		if len(r.Violations) > 0 {
			s.Failed++
		}
		s.add(&r.Tally)
		times = append(times, r.converge...)
		count += r.convergeCount
		if s.Counters == nil {
			s.Counters = slices.Clone(r.Counters)
		} else {
			for i := range r.Counters {
				s.Counters[i].Value += r.Counters[i].Value
			}
		}
	}
	for _, c := range s.Counters {
		if c.Name == idem.CounterReconcileResolved.Name() {
			s.Reconciled = c.Value
		}
	}
	s.ConvergeMax, s.ConvergeP99 = tailMaxAndP99(times, count)
	return s
}

// tailMaxAndP99 is maxAndP99 of count times of which only the largest are
// in times: all those at or above the 99th percentile (convergeTail keeps
// them), so that the percentile is counted down from the maximum.
func tailMaxAndP99(times []int64, count int) (time.Duration, time.Duration) {
	if len(times) == 0 {
		return 0, 0
	}
	count = max(count, len(times)) // a tail is never more than the whole
	slices.Sort(times)
	above := count - 1 - count*99/100 // times after the p99 in the whole, sorted
	i := max(len(times)-1-above, 0)   // 0 only if the tail was cut too short, which convergeTail never does
	return time.Duration(times[len(times)-1]), time.Duration(times[i])
}

// maxAndP99 sorts times (virtual nanoseconds) and returns their maximum and
// 99th percentile, or zeros when there are none.
func maxAndP99(times []int64) (time.Duration, time.Duration) {
	return tailMaxAndP99(times, len(times))
}

// WriteText writes what simrun prints: the parameters, each seed's line
// (every seed when verbose, else those with violations), each violation with
// its scope's events and the command that reproduces it, and the summary.
func WriteText(out io.Writer, cfg Config, seeds int, reports []*Report, verbose bool) {
	fmt.Fprintf(out, "%s\nseeds:      %d from %d\n", cfg.Describe(), seeds, cfg.Seed)
	if len(reports) == 1 {
		fmt.Fprintf(out, "fault rates: %s\n", describeRates(&reports[0].Rates))
	}
	fmt.Fprintln(out)
	for _, r := range reports {
		if !verbose && len(r.Violations) == 0 {
			continue
		}
		status := "ok"
		if len(r.Violations) > 0 {
			status = "VIOLATION"
		}
		fmt.Fprintf(out, "seed %d: %s requests=%d charges=%d replays=%d converge_max=%v faults: %s\n",
			r.Config.Seed, status, r.Requests, r.Charges, r.Replays, r.ConvergeMax.Round(time.Millisecond), describeRates(&r.Rates))
		if r.HostStall > 0 {
			fmt.Fprintf(out, "  the host stalled the live run %v in all, %v at most at once (the real-time bounds were widened by them)\n",
				r.HostStall.Round(time.Millisecond), r.HostStallMax.Round(time.Millisecond))
		}
		for _, v := range r.Violations {
			fmt.Fprintf(out, "  invariant %d (%s) broken at %s in scope %s:\n    %s\n", v.Invariant, v.Name, fmtTime(v.At), v.Scope, v.Detail)
			if len(v.Events) > 0 {
				fmt.Fprintf(out, "  the scope's events:\n")
				for _, e := range v.Events {
					fmt.Fprintf(out, "    %s\n", e)
				}
			}
			fmt.Fprintf(out, "  lifecycle: %s\n", describePolicy(&r.Config.Lifecycle))
			fmt.Fprintf(out, "  reproduce: %s\n", r.Config.Command())
		}
	}
	s := Summarize(reports)
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	stopped := "every seed ran to the end"
	if s.Failed > 0 {
		stopped = fmt.Sprintf("%d stopped at their first violation", s.Failed)
	}
	fmt.Fprintf(out, "\nsummary over %d seeds (%d with violations; %s)\n", s.Seeds, s.Failed, stopped)
	fmt.Fprintf(out, "  requests           %d payments sent, %d with a definitive answer, %d keys left to an operator\n", s.Requests, s.Done, s.Abandoned)
	fmt.Fprintf(out, "  executions         %d gateway calls, %d of them processed: %d charges, %d declines and other business answers;\n",
		s.Executions, s.Charges+s.Declines, s.Charges, s.Declines)
	fmt.Fprintf(out, "                     %d processed again after their key expired (a retry past the TTL is a new request)\n", s.Reincarnated)
	fmt.Fprintf(out, "  answers            %d to attempts: executed %d, replayed %d, 409 %d, 202 %d, 422 %d, 503 %d, other 5xx %d\n",
		s.Executed+s.Replays+s.Status409+s.Status202+s.Status422+s.Status503+s.Status5xx,
		s.Executed, s.Replays, s.Status409, s.Status202, s.Status422, s.Status503, s.Status5xx)
	fmt.Fprintf(out, "  reconciler         %d unknowns settled\n", s.Reconciled)
	if s.LinChecked > 0 {
		fmt.Fprintf(out, "  linearizability    %d store operations checked\n", s.LinChecked)
	}
	fmt.Fprintf(out, "  time to converge   max %s, p99 %s (virtual, first send to definitive answer)\n", ms(s.ConvergeMax), ms(s.ConvergeP99))
	fmt.Fprintf(out, "  counters\n")
	for _, c := range s.Counters {
		fmt.Fprintf(out, "    %-45s %d\n", c.Name, c.Value)
	}
	violations := 0
	for _, r := range reports {
		violations += len(r.Violations)
	}
	fmt.Fprintf(out, "violations: %d\n", violations)
}

// jsonReport is one seed in the JSON summary.
type jsonReport struct {
	Seed       uint64             `json:"seed"`
	Faults     map[string]float64 `json:"faults"`
	Requests   int                `json:"requests"`
	Charges    int                `json:"charges"`
	Violations []jsonViolation    `json:"violations"`
}

type jsonViolation struct {
	Invariant int      `json:"invariant"`
	Name      string   `json:"name"`
	Scope     string   `json:"scope"`
	AtNanos   int64    `json:"at_ns"`
	Detail    string   `json:"detail"`
	Events    []string `json:"events"`
	Reproduce string   `json:"reproduce"`
}

// WriteJSON writes a machine-readable summary: the parameters, the summary,
// and every seed that broke an invariant (every seed when verbose).
func WriteJSON(out io.Writer, cfg Config, seeds int, reports []*Report, verbose bool) error {
	doc := struct {
		Command    string       `json:"command"`
		Seeds      int          `json:"seeds"`
		Summary    Summary      `json:"summary"`
		Reports    []jsonReport `json:"reports"`
		Violations int          `json:"violations"`
	}{Command: cfg.Command(), Seeds: seeds, Summary: Summarize(reports), Reports: []jsonReport{}}
	for _, r := range reports {
		doc.Violations += len(r.Violations)
		if !verbose && len(r.Violations) == 0 {
			continue
		}
		jr := jsonReport{Seed: r.Config.Seed, Faults: map[string]float64{}, Requests: r.Requests, Charges: r.Charges, Violations: []jsonViolation{}}
		for _, f := range Faults() {
			if r.Rates[f] > 0 {
				jr.Faults[f.String()] = r.Rates[f]
			}
		}
		for _, v := range r.Violations {
			jr.Violations = append(jr.Violations, jsonViolation{v.Invariant, v.Name, v.Scope, v.At, v.Detail, v.Events, r.Config.Command()})
		}
		doc.Reports = append(doc.Reports, jr)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// WriteTrace writes every event of r as one JSON object per line.
func WriteTrace(out io.Writer, r *Report) error {
	enc := json.NewEncoder(out)
	for i := range r.Events {
		e := &r.Events[i]
		scope := ""
		if e.Scope >= 0 && int(e.Scope) < len(r.Scopes) {
			scope = r.Scopes[e.Scope].String()
		}
		line := struct {
			Seed  uint64 `json:"seed"`
			At    int64  `json:"t_ns"`
			Scope string `json:"scope,omitempty"`
			Actor string `json:"actor"`
			What  string `json:"what"`
			Token uint64 `json:"token,omitempty"`
			Text  string `json:"text"`
		}{r.Config.Seed, e.At, scope, e.actor(), e.What.String(), uint64(e.Token), e.Text()}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return nil
}
