package chaos

import (
	"fmt"
	"io"
)

// Print writes the summary in simrun's style.
func (r *Report) Print(w io.Writer, cfg Config) {
	r.Report.Print(w,
		fmt.Sprintf("chaospg: seed %d, %d clients, %d keys, faults for %v (restart: %v)", cfg.Seed, cfg.Clients, cfg.Keys, cfg.Faults, cfg.Restart),
		fmt.Sprintf("faults: %d backends killed, %d tiny statement timeouts, %d restarts", r.Kills, r.Timeouts, r.Restarts))
}
