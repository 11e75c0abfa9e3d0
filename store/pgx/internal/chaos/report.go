package chaos

import (
	"fmt"
	"io"
)

// Report is what the run found; Violations empty means it passed.
type Report struct {
	Requests, Executed, Replayed, Errors, Kills, Timeouts, Restarts int
	DoubleExecutions, LostCompletions, InProgressLeft, UnknownLeft  int
	Linearizable                                                    bool
	LifecycleOps                                                    int
	Violations                                                      []string
}

// Print writes the summary in simrun's style.
func (r *Report) Print(w io.Writer, cfg Config) {
	fmt.Fprintf(w, "chaospg: seed %d, %d clients, %d keys, faults for %v (restart: %v)\n", cfg.Seed, cfg.Clients, cfg.Keys, cfg.Faults, cfg.Restart)
	fmt.Fprintf(w, "  requests %d: executed %d, replayed %d, errors %d (fail closed under faults)\n", r.Requests, r.Executed, r.Replayed, r.Errors)
	fmt.Fprintf(w, "  faults: %d backends killed, %d tiny statement timeouts, %d restarts\n", r.Kills, r.Timeouts, r.Restarts)
	fmt.Fprintf(w, "  double executions      %d\n", r.DoubleExecutions)
	fmt.Fprintf(w, "  lost completions       %d\n", r.LostCompletions)
	fmt.Fprintf(w, "  in_progress left       %d (unknown left %d)\n", r.InProgressLeft, r.UnknownLeft)
	fmt.Fprintf(w, "  lifecycle history      %d operations, linearizable: %v\n", r.LifecycleOps, r.Linearizable)
	if len(r.Violations) == 0 {
		fmt.Fprintln(w, "  OK: 0 violations")
		return
	}
	fmt.Fprintf(w, "  FAIL: %d violations\n", len(r.Violations))
	for i, v := range r.Violations {
		if i == 10 {
			fmt.Fprintf(w, "    ... %d more\n", len(r.Violations)-10)
			break
		}
		fmt.Fprintln(w, "    "+v)
	}
}
