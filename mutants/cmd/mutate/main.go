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

func run(args []string, stdout, stderr io.Writer) int {
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
		return 2
	}
	if err := o.pickLayers(*layersFlag); err != nil {
		fmt.Fprintf(stderr, "mutate: -layers: %v\n", err)
		return 2
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	var pick *regexp.Regexp
	if o.only != "" {
		if pick, err = regexp.Compile(o.only); err != nil {
			fmt.Fprintf(stderr, "mutate: -run: %v\n", err)
			return 2
		}
	}
	var ms []*mutants.Mutant
	ids := map[string]bool{}
	for i := range mutants.Catalogue {
		m := &mutants.Catalogue[i]
		if ids[m.ID] {
			fmt.Fprintf(stderr, "mutate: mutant %s listed twice\n", m.ID)
			return 2
		}
		ids[m.ID] = true
		if pick == nil || pick.MatchString(m.ID) {
			ms = append(ms, m)
		}
	}
	if o.list {
		for _, m := range ms {
			eq := ""
			if m.Equivalent != "" {
				eq = " [equivalent: " + m.Equivalent + "]"
			}
			fmt.Fprintf(stdout, "%-40s %-28s %s%s\n", m.ID, m.File, m.Desc, eq)
		}
		return 0
	}
	bad := 0
	for _, m := range ms {
		if _, err := mutate(root, m); err != nil {
			fmt.Fprintf(stderr, "mutate: %v\n", err)
			bad++
		} else if areaOf(m.File) == nil {
			fmt.Fprintf(stderr, "mutate: %s: %s is in no area (areas.go)\n", m.ID, m.File)
			bad++
		}
	}
	if bad > 0 {
		return 2
	}
	tmp, err := os.MkdirTemp("", "idem-mutants-")
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	defer os.RemoveAll(tmp)
	r := &runner{root: root, tmp: tmp, o: &o, log: stderr}
	if o.check {
		for _, m := range ms {
			overlay, err := r.overlay(m)
			if err == nil {
				err = r.vet(m, overlay)
			}
			if err != nil {
				fmt.Fprintf(stderr, "mutate: %v\n", err)
				bad++
			}
		}
		if bad > 0 {
			return 2
		}
		fmt.Fprintf(stdout, "%d mutants apply, build and vet\n", len(ms))
		return 0
	}
	start := time.Now()
	if o.liveRuns < 1 || o.liveSeeds < 1 {
		fmt.Fprintf(stderr, "mutate: -live-runs %d, -live-seeds %d: want at least 1\n", o.liveRuns, o.liveSeeds)
		return 2
	}
	fmt.Fprintf(stderr, "mutate: %d mutants; %s\n", len(ms), o.describe())
	if !o.noBaseline {
		base := r.layers(nil, "", "baseline")
		for l, c := range base.cells {
			if c.killed() || c.mark == "B" {
				fmt.Fprintf(stderr, "mutate: the unmutated code fails the %s layer (%s): fix that first\n", layerNames[l], c)
				return 2
			}
		}
		fmt.Fprintf(stderr, "mutate: baseline passes every layer (%v)\n", base.took.Round(time.Second))
	}
	var rows []*row
	for i, m := range ms {
		rw := r.mutant(m)
		rows = append(rows, rw)
		c := rw.cells
		fmt.Fprintf(stderr, "mutate: [%d/%d] %-40s %-16s %-6s %-12s %-20s %-20s %-20s %v\n", i+1, len(ms), m.ID,
			c[0], c[1], c[2], c[3], c[4], c[5], rw.took.Round(time.Second))
	}
	elapsed := time.Since(start)
	writeText(stdout, rows, &o, elapsed)
	if o.md != "" {
		var b bytes.Buffer
		writeMarkdown(&b, rows, &o, elapsed)
		if err := os.WriteFile(o.md, b.Bytes(), 0o644); err != nil {
			fmt.Fprintf(stderr, "mutate: %v\n", err)
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
