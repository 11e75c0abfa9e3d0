// Command mutate runs the mutant catalogue (package mutants) against every
// test layer and prints the kill matrix (issue 11 §2, issue 20 §7). `make
// mutants` runs it.
//
// Each mutant is applied through a build overlay (go build -overlay): the
// mutated file is written to a temporary directory and the go command reads
// it in place of the original, so the working tree is never touched and the
// build cache keeps every package the mutant does not reach. A mutant of
// the Node host (wasm/js) runs on a copy of that directory instead. For each
// mutant the layers that reach its area (areas.go) run in order, each with
// its own timeout:
//
//	unit         go test ./core/ ./internal/refmodel/ ./store/ ./store/mem/ .
//	             ./fingerprint/, the memory store's conformance test skipped
//	own          the tests of the mutant's own area: the unit layer for the
//	             core, store, executor, fingerprint and the reference model
//	             of the lifecycle (internal/refmodel), and with the
//	             conformance layer for the memory store; go test
//	             ./store/pgx/, ./store/storetest/, ./idemhttp/ with the
//	             example, ./wasm/, ./sim/ with simrun and linearizability;
//	             node --test for the Node host
//	conformance  go test -run '^TestMemstoreConformance$' ./store/mem/
//	sim          simrun -seeds N -lincheck=false (built once per mutant with -overlay)
//	lincheck     simrun -seeds N' -lincheck
//	live         simrun -live -seeds N'' (real time, through Executor.Do and
//	             its heartbeat; not reproducible by seed: -live-runs runs
//	             it several times and the cell says how many runs killed)
//
// A layer kills a mutant when its command fails. The matrix marks K (failed),
// T (timed out: killed), E (the simulator crashed or errored: killed), and
// "." (survived), "-" (the layer was left out by -layers: in no total), "~"
// (the layer does not reach the mutant's area: in no total). A mutant that
// does not compile is B in every column and counts as a catalogue error,
// not a kill.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/idemkit/idem/mutants"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type options struct {
	seeds, linSeeds         int
	liveSeeds, liveRuns     int
	only, md                string
	list, check, noBaseline bool
	unitTimeout, confTimeout,
	simTimeout, liveTimeout time.Duration
	skip [layerCount]bool // layers left out (-layers): their cells read "-"
}

// run is the command: parse the flags, pick the mutants, then list them,
// check them or run the matrix. Its answer is the exit status: 2 for a
// usage or catalogue error, 1 for a mutant that does not build.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if err != nil {
		if err != flag.ErrHelp && !errors.Is(err, errParse) {
			fmt.Fprintf(stderr, "mutate: %v\n", err)
		}
		return 2
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	ms, err := pickMutants(o.only)
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	if o.list {
		listMutants(stdout, ms)
		return 0
	}
	if !applies(root, ms, stderr) {
		return 2
	}
	tmp, err := os.MkdirTemp("", "idem-mutants-")
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	defer os.RemoveAll(tmp)
	r := &runner{root: root, tmp: tmp, o: o, log: stderr}
	if o.check {
		return r.check(ms, stdout)
	}
	return r.matrix(ms, stdout)
}

// errParse is a flag error the flag package has already printed.
var errParse = errors.New("bad flags")

// parseOptions reads the flags.
func parseOptions(args []string, stderr io.Writer) (*options, error) {
	var o options
	fs := flag.NewFlagSet("mutate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.seeds, "seeds", 1000, "seeds of the plain simulator run")
	fs.IntVar(&o.linSeeds, "lin-seeds", 500, "seeds of the simulator run with -lincheck (500: make sim's own run)")
	fs.StringVar(&o.only, "run", "", "only the mutants whose ID matches this regular expression")
	fs.StringVar(&o.md, "md", "", "also write the matrix as a markdown table to this file")
	fs.BoolVar(&o.list, "list", false, "list the catalogue and exit")
	fs.BoolVar(&o.check, "check", false, "only check that every mutant applies (its snippet occurs once) and exit")
	fs.BoolVar(&o.noBaseline, "no-baseline", false, "skip the run of every layer on the unmutated code")
	fs.DurationVar(&o.unitTimeout, "unit-timeout", 2*time.Minute, "timeout of the unit layer")
	fs.DurationVar(&o.confTimeout, "conformance-timeout", 2*time.Minute, "timeout of the conformance layer")
	fs.DurationVar(&o.simTimeout, "sim-timeout", time.Minute, "timeout of each simulator run")
	fs.IntVar(&o.liveSeeds, "live-seeds", 10, "seeds of the simulator run with -live (real time, through Executor.Do)")
	fs.IntVar(&o.liveRuns, "live-runs", 1, "runs of the -live layer per mutant (it is not reproducible by seed): the cell says how many killed")
	fs.DurationVar(&o.liveTimeout, "live-timeout", time.Minute, "timeout of each -live run")
	layersFlag := fs.String("layers", strings.Join(layerNames[:], ","), "the layers to run, a comma list of "+strings.Join(layerNames[:], ", ")+"; the others' cells read -")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil, err
		}
		return nil, errParse
	}
	if err := o.pickLayers(*layersFlag); err != nil {
		return nil, fmt.Errorf("-layers: %v", err)
	}
	if o.liveRuns < 1 || o.liveSeeds < 1 {
		return nil, fmt.Errorf("-live-runs %d, -live-seeds %d: want at least 1", o.liveRuns, o.liveSeeds)
	}
	return &o, nil
}

// pickMutants is the catalogue's mutants whose ID matches only (all when
// only is empty), each ID listed once.
func pickMutants(only string) ([]*mutants.Mutant, error) {
	var pick *regexp.Regexp
	if only != "" {
		var err error
		if pick, err = regexp.Compile(only); err != nil {
			return nil, fmt.Errorf("-run: %v", err)
		}
	}
	var ms []*mutants.Mutant
	ids := map[string]bool{}
	for i := range mutants.Catalogue {
		m := &mutants.Catalogue[i]
		if ids[m.ID] {
			return nil, fmt.Errorf("mutant %s listed twice", m.ID)
		}
		ids[m.ID] = true
		if pick == nil || pick.MatchString(m.ID) {
			ms = append(ms, m)
		}
	}
	return ms, nil
}

// listMutants prints ms, one per line (-list).
func listMutants(w io.Writer, ms []*mutants.Mutant) {
	for _, m := range ms {
		eq := ""
		if m.Equivalent != "" {
			eq = " [equivalent: " + m.Equivalent + "]"
		}
		fmt.Fprintf(w, "%-40s %-28s %s%s\n", m.ID, m.File, m.Desc, eq)
	}
}

// applies reports whether every mutant of ms applies (its snippet occurs
// once in its file) and lies in an area, saying why not for each.
func applies(root string, ms []*mutants.Mutant, stderr io.Writer) bool {
	ok := true
	for _, m := range ms {
		if _, err := mutate(root, m); err != nil {
			fmt.Fprintf(stderr, "mutate: %v\n", err)
			ok = false
		} else if areaOf(m.File) == nil {
			fmt.Fprintf(stderr, "mutate: %s: %s is in no area (areas.go)\n", m.ID, m.File)
			ok = false
		}
	}
	return ok
}

// check builds and vets every mutant of ms (-check).
func (r *runner) check(ms []*mutants.Mutant, stdout io.Writer) int {
	bad := 0
	for _, m := range ms {
		overlay, err := r.overlay(m)
		if err == nil {
			err = r.vet(m, overlay)
		}
		if err != nil {
			fmt.Fprintf(r.log, "mutate: %v\n", err)
			bad++
		}
	}
	if bad > 0 {
		return 2
	}
	fmt.Fprintf(stdout, "%d mutants apply, build and vet\n", len(ms))
	return 0
}

// matrix runs every layer on the unmutated code (unless -no-baseline), then
// on each mutant of ms, and prints the kill matrix.
func (r *runner) matrix(ms []*mutants.Mutant, stdout io.Writer) int {
	start := time.Now()
	fmt.Fprintf(r.log, "mutate: %d mutants; %s\n", len(ms), r.o.describe())
	if !r.o.noBaseline && !r.baselinePasses() {
		return 2
	}
	var rows []*row
	for i, m := range ms {
		rw := r.mutant(m)
		rows = append(rows, rw)
		c := rw.cells
		fmt.Fprintf(r.log, "mutate: [%d/%d] %-40s %-16s %-6s %-12s %-20s %-20s %-20s %v\n", i+1, len(ms), m.ID,
			c[0], c[1], c[2], c[3], c[4], c[5], rw.took.Round(time.Second))
	}
	elapsed := time.Since(start)
	writeText(stdout, rows, r.o, elapsed)
	if r.o.md != "" {
		var b bytes.Buffer
		writeMarkdown(&b, rows, r.o, elapsed)
		if err := os.WriteFile(r.o.md, b.Bytes(), 0o644); err != nil {
			fmt.Fprintf(r.log, "mutate: %v\n", err)
			return 2
		}
	}
	for _, rw := range rows {
		if rw.cells[0].mark == "B" {
			return 1 // a mutant that does not build is a catalogue error
		}
	}
	return 0
}

// baselinePasses runs every layer on the unmutated code: a layer that fails
// there would kill every mutant and prove nothing.
func (r *runner) baselinePasses() bool {
	base := r.layers(nil, "", "baseline")
	for l, c := range base.cells {
		if c.killed() || c.mark == "B" {
			fmt.Fprintf(r.log, "mutate: the unmutated code fails the %s layer (%s): fix that first\n", layerNames[l], c)
			return false
		}
	}
	fmt.Fprintf(r.log, "mutate: baseline passes every layer (%v)\n", base.took.Round(time.Second))
	return true
}

// moduleRoot is the directory of the main module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a module: run from the repository")
	}
	return filepath.Dir(gomod), nil
}

// describe says how the simulator layers run.
func (o *options) describe() string {
	return fmt.Sprintf("sim -seeds %d, lincheck -seeds %d, live -seeds %d x %d runs", o.seeds, o.linSeeds, o.liveSeeds, o.liveRuns)
}
