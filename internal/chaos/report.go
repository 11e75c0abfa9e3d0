package chaos

import (
	"fmt"
	"io"
)

// Report is what the run found; Violations empty means it passed.
type Report struct {
	Requests, Executed, Replayed, Errors int
	KeysUsed                             int // the keys the clients sent
	DoubleExecutions, LostCompletions    int
	InProgressLeft, UnknownLeft          int
	Crashes                              int // servers the target killed
	LostWrites                           int // acknowledged writes the store lost
	LostSeen                             int // states shown to a reader (never acknowledged to their writer) the store lost
	ExcusedKeys                          int // keys that lost a write to a crash, where the store's durability allows it
	Linearizable                         bool
	LifecycleOps                         int // of the keys not excused
	Violations                           []string
}

// Stuck is how many records were left in progress or unknown.
func (r *Report) Stuck() int { return r.InProgressLeft + r.UnknownLeft }

// Print writes the summary in simrun's style: header and faults are the
// command's first two lines (its settings, the faults it injected).
func (r *Report) Print(w io.Writer, header, faults string) {
	fmt.Fprintln(w, header)
	fmt.Fprintf(w, "  requests %d: executed %d, replayed %d, errors %d (fail closed under faults)\n", r.Requests, r.Executed, r.Replayed, r.Errors)
	fmt.Fprintln(w, "  "+faults)
	fmt.Fprintf(w, "  acknowledged writes lost %d (and %d states shown only to readers), on %d keys excused\n", r.LostWrites, r.LostSeen, r.ExcusedKeys)
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
