// Command lincheck checks a store's history, recorded in any language in
// the JSON Lines format of package linearizability (linearizability/HISTORY.md), against
// idem's models: the store model for its store calls, the lifecycle model
// (every event replayed through core.Step) for its events.
//
//	lincheck [-html DIR] [-timeout D] history.jsonl...
//
// It prints one report per history and per model, and for a history that
// is not linearizable the path of porcupine's HTML drawing of the scope at
// fault. Exit status: 0 every history is linearizable, 1 one is not (or the
// check ran out of time: not a pass), 2 bad flags or a history it cannot
// read.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/idemkit/idem/linearizability"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lincheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	html := fs.String("html", "", "directory for the HTML drawing of a history that is not linearizable (default: a new one under the system's temporary directory)")
	timeout := fs.Duration("timeout", time.Minute, "porcupine's budget per history and model (0: none); past it the check is unknown, which is not a pass")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "lincheck: name at least one history file (JSON Lines, see HISTORY.md)")
		return 2
	}
	status := 0
	for _, path := range fs.Args() {
		h, err := read(path)
		if err != nil {
			fmt.Fprintf(stderr, "lincheck: %s: %v\n", path, err)
			return 2
		}
		o := linearizability.CheckOptions{Timeout: *timeout, VisualizationDir: *html, Name: "lincheck"}
		if len(h.Store) > 0 {
			r := linearizability.CheckStoreHistory(h.Store, o)
			fmt.Fprintf(stdout, "%s: store calls: %v\n", path, r)
			status = max(status, exitOf(r))
		}
		if len(h.Lifecycle) > 0 {
			r := linearizability.CheckLifecycleHistory(h.Lifecycle, *h.Policy, o)
			fmt.Fprintf(stdout, "%s: events: %v\n", path, r)
			status = max(status, exitOf(r))
		}
		if len(h.Store) == 0 && len(h.Lifecycle) == 0 {
			fmt.Fprintf(stderr, "lincheck: %s: no operation to check\n", path)
			return 2
		}
	}
	return status
}

func read(path string) (linearizability.History, error) {
	f, err := os.Open(path)
	if err != nil {
		return linearizability.History{}, err
	}
	defer f.Close()
	return linearizability.ReadHistory(f)
}

// exitOf is 0 for a linearizable history, 2 for a malformed one, else 1.
func exitOf(r linearizability.Report) int {
	switch {
	case r.OK():
		return 0
	case r.Check == "" && r.Err != nil:
		return 2
	}
	return 1
}
