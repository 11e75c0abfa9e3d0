// Command mutate runs the mutant catalogue (package mutants) against every
// test layer and prints the kill matrix (issue 11 §2). `make mutants` runs it.
//
// Each mutant is applied through a build overlay (go build -overlay): the
// mutated file is written to a temporary directory and the go command reads
// it in place of the original, so the working tree is never touched and the
// build cache keeps every package the mutant does not reach. For each mutant
// the layers run in order, each with its own timeout:
//
//	unit         go test ./core/ ./store/ ./store/mem/ . ./fingerprint/, the
//	             memory store's conformance test skipped
//	conformance  go test -run '^TestMemstoreConformance$' ./store/mem/
//	sim          simrun -seeds N -lincheck=false (built once per mutant with -overlay)
//	lincheck     simrun -seeds N' -lincheck
//	live         simrun -live -seeds N'' (real time, through Executor.Do and
//	             its heartbeat; not reproducible by seed: -live-runs runs
//	             it several times and the cell says how many runs killed)
//
// A layer kills a mutant when its command fails. The matrix marks K (failed),
// T (timed out: killed), E (the simulator crashed or errored: killed), and
// "." (survived), "-" (the layer was left out by -layers: in no total). A
// mutant that does not compile is B in every column and
// counts as a catalogue error, not a kill.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
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

// layer is one column of the matrix.
type layer int

const (
	layerUnit layer = iota
	layerConf
	layerSim
	layerLin
	layerLive
	layerCount
)

var layerNames = [layerCount]string{"unit", "conformance", "sim", "lincheck", "live"}

// pickLayers sets o.skip from a comma list of layer names.
func (o *options) pickLayers(list string) error {
	for l := range o.skip {
		o.skip[l] = true
	}
	for _, name := range strings.Split(list, ",") {
		i := slices.Index(layerNames[:], strings.TrimSpace(name))
		if i < 0 {
			return fmt.Errorf("no layer %q", name)
		}
		o.skip[i] = false
	}
	return nil
}

// cell is one layer's verdict on one mutant.
type cell struct {
	mark   string // K, T, E, B or "."
	detail string // failing packages, or failing seeds and invariants
}

func (c cell) killed() bool { return c.mark == "K" || c.mark == "T" || c.mark == "E" }

func (c cell) String() string {
	if c.detail == "" {
		return c.mark
	}
	return c.mark + " " + c.detail
}

type row struct {
	m     *mutants.Mutant
	cells [layerCount]cell
	took  time.Duration
}

func (r *row) killedBySim() bool {
	return r.cells[layerSim].killed() || r.cells[layerLin].killed() || r.cells[layerLive].killed()
}

func (r *row) survivedAll() bool {
	for _, c := range r.cells {
		if c.killed() {
			return false
		}
	}
	return true
}

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("mutate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.seeds, "seeds", 1000, "seeds of the plain simulator run")
	fs.IntVar(&o.linSeeds, "lin-seeds", 300, "seeds of the simulator run with -lincheck")
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
				pkg := "./" + filepath.Dir(m.File) + "/"
				if res := r.exec(3*time.Minute, "go", "vet", "-overlay", overlay, pkg); res.code != 0 {
					err = fmt.Errorf("%s does not vet:\n%s", m.ID, tail(res.out, 10))
				}
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
		base := r.layers("", "baseline")
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
		fmt.Fprintf(stderr, "mutate: [%d/%d] %-40s %-16s %-16s %-20s %-20s %-20s %v\n", i+1, len(ms), m.ID,
			rw.cells[0], rw.cells[1], rw.cells[2], rw.cells[3], rw.cells[4], rw.took.Round(time.Second))
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

// mutate returns m's file with its snippet replaced, or why it cannot.
func mutate(root string, m *mutants.Mutant) ([]byte, error) {
	src, err := os.ReadFile(filepath.Join(root, m.File))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", m.ID, err)
	}
	if n := bytes.Count(src, []byte(m.Old)); n != 1 {
		return nil, fmt.Errorf("%s: its snippet occurs %d times in %s, want once (the code moved: update the catalogue)", m.ID, n, m.File)
	}
	return bytes.Replace(src, []byte(m.Old), []byte(m.New), 1), nil
}

type runner struct {
	root, tmp string
	o         *options
	log       io.Writer
}

// overlay writes m's mutated file and the overlay that puts it in place of
// the original, and returns the overlay's path.
func (r *runner) overlay(m *mutants.Mutant) (string, error) {
	dir := filepath.Join(r.tmp, m.ID)
	overlay := filepath.Join(dir, "overlay.json")
	src, err := mutate(r.root, m)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	mutated := filepath.Join(dir, filepath.Base(m.File))
	if err := os.WriteFile(mutated, src, 0o644); err != nil {
		return "", err
	}
	js, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(r.root, m.File): mutated}})
	if err != nil {
		return "", err
	}
	return overlay, os.WriteFile(overlay, js, 0o644)
}

// mutant writes m's overlay and runs every layer under it.
func (r *runner) mutant(m *mutants.Mutant) *row {
	overlay, err := r.overlay(m)
	if err != nil {
		fmt.Fprintf(r.log, "mutate: %s: %v\n", m.ID, err)
		rw := &row{m: m}
		for l := range rw.cells {
			rw.cells[l] = cell{mark: "B"}
		}
		return rw
	}
	rw := r.layers(overlay, m.ID)
	rw.m = m
	return rw
}

// layers runs every layer, with overlay (none when empty), and fills a row.
func (r *runner) layers(overlay, name string) *row {
	start := time.Now()
	rw := &row{}
	var ov []string
	if overlay != "" {
		ov = []string{"-overlay", overlay}
	}
	goCmd := func(args ...string) []string {
		return append(append([]string{"go", args[0]}, ov...), args[1:]...)
	}
	// No separate build: the unit layer compiles every package a mutant
	// can reach but the simulator's, whose build comes next.
	for l := range rw.cells {
		if r.o.skip[l] {
			rw.cells[l] = cell{mark: "-"}
		}
	}
	if !r.o.skip[layerUnit] {
		unit := r.exec(r.o.unitTimeout, goCmd("test", "-timeout", (r.o.unitTimeout-10*time.Second).String(),
			"-skip", "^TestMemstoreConformance$", "./core/", "./store/", "./store/mem/", ".", "./fingerprint/")...)
		rw.cells[layerUnit] = unitCell(unit)
	}
	if rw.cells[layerUnit].mark == "B" {
		fmt.Fprintf(r.log, "mutate: %s does not build\n", name)
		for l := range rw.cells {
			rw.cells[l] = cell{mark: "B"}
		}
		rw.took = time.Since(start)
		return rw
	}
	if !r.o.skip[layerConf] {
		conf := r.exec(r.o.confTimeout, goCmd("test", "-timeout", (r.o.confTimeout-10*time.Second).String(),
			"-run", "^TestMemstoreConformance$", "./store/mem/")...)
		rw.cells[layerConf] = plainCell(conf)
	}
	if r.o.skip[layerSim] && r.o.skip[layerLin] && r.o.skip[layerLive] {
		rw.took = time.Since(start)
		return rw
	}
	bin := filepath.Join(r.tmp, "simrun-"+name)
	if res := r.exec(3*time.Minute, goCmd("build", "-o", bin, "./cmd/simrun")...); res.code != 0 {
		fmt.Fprintf(r.log, "mutate: %s: simrun does not build:\n%s\n", name, tail(res.out, 20))
		rw.cells[layerSim], rw.cells[layerLin], rw.cells[layerLive] = cell{mark: "B"}, cell{mark: "B"}, cell{mark: "B"}
	} else {
		if !r.o.skip[layerSim] {
			rw.cells[layerSim] = simCell(r.exec(r.o.simTimeout, bin, "-seeds", strconv.Itoa(r.o.seeds), "-lincheck=false"))
		}
		if !r.o.skip[layerLin] {
			rw.cells[layerLin] = simCell(r.exec(r.o.simTimeout, bin, "-seeds", strconv.Itoa(r.o.linSeeds), "-lincheck"))
		}
		if !r.o.skip[layerLive] {
			rw.cells[layerLive] = r.live(bin)
		}
		os.Remove(bin)
	}
	rw.took = time.Since(start)
	return rw
}

// result is how one command ended.
type result struct {
	code     int // exit status; -1 when it could not start or was killed by a signal
	timedOut bool
	out      []byte // stdout and stderr
}

// exec runs argv in the module root with a timeout, killing its whole
// process group when the time is up.
func (r *runner) exec(timeout time.Duration, argv ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = r.root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	res := result{out: out.Bytes()}
	switch {
	case ctx.Err() != nil:
		res.code, res.timedOut = -1, true
	case err == nil:
	case errors.As(err, new(*exec.ExitError)):
		res.code = cmd.ProcessState.ExitCode()
	default:
		res.code = -1
		res.out = append(res.out, []byte(err.Error())...)
	}
	return res
}

// plainCell is a go test layer's verdict: go test's own -timeout (a test
// that hangs) counts as a timeout, a package that does not compile as B.
func plainCell(res result) cell {
	switch {
	case res.timedOut || bytes.Contains(res.out, []byte("panic: test timed out")):
		return cell{mark: "T"}
	case bytes.Contains(res.out, []byte("[build failed]")) || bytes.Contains(res.out, []byte("[setup failed]")):
		return cell{mark: "B"}
	case res.code != 0:
		return cell{mark: "K"}
	}
	return cell{mark: "."}
}

var pkgShort = map[string]string{
	"github.com/idemkit/idem":             "root",
	"github.com/idemkit/idem/core":        "core",
	"github.com/idemkit/idem/store":       "store",
	"github.com/idemkit/idem/store/mem":   "mem",
	"github.com/idemkit/idem/fingerprint": "fp",
}

// unitCell names the packages whose tests failed.
func unitCell(res result) cell {
	c := plainCell(res)
	if c.mark == "." || c.mark == "B" {
		return c
	}
	var pkgs []string
	sc := bufio.NewScanner(bytes.NewReader(res.out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "FAIL" {
			if s, ok := pkgShort[f[1]]; ok && !contains(pkgs, s) {
				pkgs = append(pkgs, s)
			}
		}
	}
	c.detail = strings.Join(pkgs, ",")
	return c
}

var (
	summaryRE   = regexp.MustCompile(`summary over (\d+) seeds \((\d+) with violations[;)]`)
	invariantRE = regexp.MustCompile(`(?m)^  invariant (\d+) \(`)
)

// simCell says how many seeds failed and which invariants broke: exit 1 is
// a violation, any other failure a crash or an error of the run.
func simCell(res result) cell {
	switch {
	case res.timedOut:
		return cell{mark: "T"}
	case res.code == 0:
		return cell{mark: "."}
	case res.code != 1:
		return cell{mark: "E"}
	}
	c := cell{mark: "K"}
	if m := summaryRE.FindSubmatch(res.out); m != nil {
		c.detail = string(m[2]) + "/" + string(m[1])
	}
	var invs []string
	for _, m := range invariantRE.FindAllSubmatch(res.out, -1) {
		if s := string(m[1]); !contains(invs, s) {
			invs = append(invs, s)
		}
	}
	sort.Strings(invs)
	if len(invs) > 0 {
		c.detail += " inv" + strings.Join(invs, ",")
	}
	return c
}

// live runs the -live layer -live-runs times. Its runs are on real time,
// not reproducible by seed: the cell is K when any run killed, with how
// many did ("3/5 runs") when there was more than one, and the invariants
// broken in any.
func (r *runner) live(bin string) cell {
	var cells []cell
	for range r.o.liveRuns {
		cells = append(cells, simCell(r.exec(r.o.liveTimeout, bin, "-live", "-seeds", strconv.Itoa(r.o.liveSeeds))))
	}
	return liveCell(cells)
}

// liveCell sums the cells of the -live runs.
func liveCell(cells []cell) cell {
	if len(cells) == 1 {
		return cells[0]
	}
	killed, mark := 0, "."
	var invs []string
	for _, c := range cells {
		if !c.killed() {
			continue
		}
		killed++
		if mark == "." || c.mark == "K" {
			mark = c.mark
		}
		if i := strings.Index(c.detail, " inv"); i >= 0 {
			for _, inv := range strings.Split(c.detail[i+len(" inv"):], ",") {
				if !contains(invs, inv) {
					invs = append(invs, inv)
				}
			}
		}
	}
	if killed == 0 {
		return cell{mark: "."}
	}
	sort.Strings(invs)
	detail := fmt.Sprintf("%d/%d runs", killed, len(cells))
	if len(invs) > 0 {
		detail += " inv" + strings.Join(invs, ",")
	}
	return cell{mark: mark, detail: detail}
}

// describe says how the simulator layers run.
func (o *options) describe() string {
	return fmt.Sprintf("sim -seeds %d, lincheck -seeds %d, live -seeds %d x %d runs", o.seeds, o.linSeeds, o.liveSeeds, o.liveRuns)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func tail(b []byte, lines int) string {
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// totals counts the kills of each layer among the non-equivalent mutants.
type totals struct {
	real, equivalent, store  int
	killed, ran              [layerCount]int // ran: the mutants a layer ran on (not left out by -layers)
	simKilled, storeConfKill int
	equivalentKilled         int
	survivors                [layerCount][]string
	notBySim, storeNotByConf []string
	survivedAll              []string
}

func count(rows []*row) totals {
	var t totals
	for _, rw := range rows {
		if rw.m.Equivalent != "" {
			t.equivalent++
			if !rw.survivedAll() {
				t.equivalentKilled++
			}
			continue
		}
		t.real++
		for l, c := range rw.cells {
			switch {
			case c.mark == "-":
				continue
			case c.killed():
				t.killed[l]++
			default:
				t.survivors[l] = append(t.survivors[l], rw.m.ID)
			}
			t.ran[l]++
		}
		if rw.killedBySim() {
			t.simKilled++
		} else {
			t.notBySim = append(t.notBySim, rw.m.ID)
		}
		if rw.m.Store() {
			t.store++
			if rw.cells[layerConf].killed() {
				t.storeConfKill++
			} else {
				t.storeNotByConf = append(t.storeNotByConf, rw.m.ID)
			}
		}
		if rw.survivedAll() {
			t.survivedAll = append(t.survivedAll, rw.m.ID)
		}
	}
	return t
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func writeText(w io.Writer, rows []*row, o *options, elapsed time.Duration) {
	fmt.Fprintf(w, "\nkill matrix: %d mutants; %s; %v\n\n", len(rows), o.describe(), elapsed.Round(time.Second))
	fmt.Fprintf(w, "%-40s %-16s %-12s %-18s %-18s %-18s\n", "mutant", "unit", "conformance", "sim", "lincheck", "live")
	for _, rw := range rows {
		id := rw.m.ID
		if rw.m.Equivalent != "" {
			id += " (eq)"
		}
		fmt.Fprintf(w, "%-40s %-16s %-12s %-18s %-18s %-18s\n", id, rw.cells[0], rw.cells[1], rw.cells[2], rw.cells[3], rw.cells[4])
	}
	t := count(rows)
	fmt.Fprintf(w, "\ntotals over %d non-equivalent mutants (%d equivalent, %d of them killed):\n", t.real, t.equivalent, t.equivalentKilled)
	for l := range layerCount {
		fmt.Fprintf(w, "  %-12s %3d killed, %3d survived\n", layerNames[l], t.killed[l], t.ran[l]-t.killed[l])
	}
	fmt.Fprintf(w, "  %-12s %3d killed, %3d survived (sim, lincheck or live)\n", "simulator", t.simKilled, t.real-t.simKilled)
	fmt.Fprintf(w, "\ntargets:\n")
	fmt.Fprintf(w, "  every non-equivalent mutant killed by the simulator: %s (%d/%d)\n", met(len(t.notBySim) == 0), t.simKilled, t.real)
	fmt.Fprintf(w, "  every store mutant killed by the conformance suite: %s (%d/%d)\n", met(len(t.storeNotByConf) == 0), t.storeConfKill, t.store)
	fmt.Fprintf(w, "  no mutant survives every layer: %s (%d survive)\n", met(len(t.survivedAll) == 0), len(t.survivedAll))
	list := func(name string, ids []string) {
		if len(ids) > 0 {
			fmt.Fprintf(w, "  %s: %s\n", name, strings.Join(ids, ", "))
		}
	}
	fmt.Fprintf(w, "\nsurvivors:\n")
	for l := range layerCount {
		list(layerNames[l], t.survivors[l])
	}
	list("not killed by the simulator", t.notBySim)
	list("store mutants not killed by conformance", t.storeNotByConf)
	list("survive every layer", t.survivedAll)
}

func writeMarkdown(w io.Writer, rows []*row, o *options, elapsed time.Duration) {
	fmt.Fprintf(w, "%d mutants; %s; the run took %v.\n\n", len(rows), o.describe(), elapsed.Round(time.Second))
	fmt.Fprintf(w, "| mutant | file | bug planted | unit | conformance | sim | lincheck | live |\n|---|---|---|---|---|---|---|---|\n")
	for _, rw := range rows {
		desc := rw.m.Desc
		if rw.m.Equivalent != "" {
			desc = "**equivalent**: " + desc
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %s | %s | %s |\n", rw.m.ID, rw.m.File, strings.ReplaceAll(desc, "|", "\\|"),
			rw.cells[0], rw.cells[1], rw.cells[2], rw.cells[3], rw.cells[4])
	}
	t := count(rows)
	fmt.Fprintf(w, "\n| layer | killed | survived |\n|---|---|---|\n")
	for l := range layerCount {
		fmt.Fprintf(w, "| %s | %d | %d |\n", layerNames[l], t.killed[l], t.ran[l]-t.killed[l])
	}
	fmt.Fprintf(w, "| simulator (sim, lincheck or live) | %d | %d |\n", t.simKilled, t.real-t.simKilled)
	fmt.Fprintf(w, "\nTotals over the %d non-equivalent mutants; the %d equivalent ones (%d killed) count in none.\n", t.real, t.equivalent, t.equivalentKilled)
}
