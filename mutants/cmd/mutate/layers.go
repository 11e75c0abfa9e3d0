package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idemkit/idem/mutants"
)

// layer is one column of the matrix.
type layer int

const (
	layerUnit layer = iota
	layerOwn
	layerConf
	layerSim
	layerLin
	layerLive
	layerCount
)

var layerNames = [layerCount]string{"unit", "own", "conformance", "sim", "lincheck", "live"}

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

type runner struct {
	root, tmp string
	o         *options
	log       io.Writer
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

// overlay writes m's mutated file and the overlay that puts it in place of
// the original, and returns the overlay's path. For a file Node reads (the
// go command's overlay does not reach it), it is the directory of a copy of
// wasm/js with the mutated file, beside a link to the module.
func (r *runner) overlay(m *mutants.Mutant) (string, error) {
	dir := filepath.Join(r.tmp, m.ID)
	src, err := mutate(r.root, m)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if areaOf(m.File).node {
		return r.nodeCopy(dir, m.File, src)
	}
	overlay := filepath.Join(dir, "overlay.json")
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

// nodeCopy makes dir/wasm/js a copy of the Node package with file (under
// wasm/js) replaced by src, and the rest of dir links to the checkout; it
// returns dir/wasm/js.
func (r *runner) nodeCopy(dir, file string, src []byte) (string, error) {
	from, to := filepath.Join(r.root, "wasm", "js"), filepath.Join(dir, "wasm", "js")
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		return "", err
	}
	// Everything else the tests read (the modules the package loads from
	// ../, the README, the JCS vectors, the module that cmd/lincheck runs
	// from) is the checkout's, linked: only wasm/js is the mutant's.
	for _, level := range [][2]string{{"", "wasm"}, {"wasm", "js"}} {
		entries, err := os.ReadDir(filepath.Join(r.root, level[0]))
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if e.Name() == level[1] || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if err := os.Symlink(filepath.Join(r.root, level[0], e.Name()), filepath.Join(dir, level[0], e.Name())); err != nil {
				return "", err
			}
		}
	}
	rel, err := filepath.Rel(filepath.Join("wasm", "js"), file)
	if err != nil {
		return "", err
	}
	return to, os.WriteFile(filepath.Join(to, rel), src, 0o644)
}

// nodeBaseline is a copy of wasm/js made as a mutant's is (nodeCopy), with
// idem.mjs unchanged: the baseline runs Node on it, so that a copy that
// cannot pass (a file the tests need and the copy lacks) fails the
// baseline instead of killing every Node mutant.
func (r *runner) nodeBaseline() (string, error) {
	file := filepath.Join("wasm", "js", "idem.mjs")
	src, err := os.ReadFile(filepath.Join(r.root, file))
	if err != nil {
		return "", err
	}
	return r.nodeCopy(filepath.Join(r.tmp, "baseline-node"), file, src)
}

// vet checks that m, applied by overlay, builds and vets (go vet), or for
// the Node host parses (node --check).
func (r *runner) vet(m *mutants.Mutant, overlay string) error {
	argv := []string{"go", "vet", "-overlay", overlay, "./" + r.packageOf(m.File) + "/"}
	if areaOf(m.File).node {
		rel, _ := filepath.Rel(filepath.Join("wasm", "js"), m.File)
		argv = []string{"node", "--check", filepath.Join(overlay, rel)}
	}
	if res := r.exec(3*time.Minute, argv...); res.code != 0 {
		return fmt.Errorf("%s does not vet:\n%s", m.ID, tail(res.out, 10))
	}
	return nil
}

// packageOf is the directory of the package that builds file: its own, or
// for a file the package embeds (store/pgx/migrations/*.sql) the nearest
// directory above it that holds Go files.
func (r *runner) packageOf(file string) string {
	dir := filepath.Dir(file)
	for dir != "." {
		if gos, _ := filepath.Glob(filepath.Join(r.root, dir, "*.go")); len(gos) > 0 {
			break
		}
		dir = filepath.Dir(dir)
	}
	return dir
}

// mutant writes m's overlay and runs every layer that reaches it.
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
	rw := r.layers(areaOf(m.File), overlay, m.ID)
	rw.m = m
	return rw
}

// layers runs every layer that reaches a (every layer, for the baseline:
// a nil a), with overlay (none when empty), and fills a row.
func (r *runner) layers(a *area, overlay, name string) *row {
	start := time.Now()
	rw := &row{}
	defer func() { rw.took = time.Since(start) }()
	for l := range rw.cells {
		switch {
		case a != nil && !a.reach[l]:
			rw.cells[l] = cell{mark: "~"}
		case r.o.skip[l]:
			rw.cells[l] = cell{mark: "-"}
		}
	}
	run := func(l layer) bool { return rw.cells[l].mark == "" }
	var ov []string
	if overlay != "" && (a == nil || !a.node) {
		ov = []string{"-overlay", overlay}
	}
	goCmd := func(timeout time.Duration, args ...string) []string {
		argv := append(append([]string{"go", args[0]}, ov...), args[1:]...)
		if args[0] == "test" {
			argv = slices.Insert(argv, 2+len(ov), "-timeout", (timeout - 10*time.Second).String())
		}
		return argv
	}
	// No separate build: the unit layer compiles every package a mutant
	// can reach but the simulator's, whose build comes next.
	if run(layerUnit) {
		rw.cells[layerUnit] = unitCell(r.exec(r.o.unitTimeout, goCmd(r.o.unitTimeout, "test",
			"-skip", "^TestMemstoreConformance$", "./core/", "./internal/refmodel/", "./store/", "./store/mem/", ".", "./flow/", "./fingerprint/")...))
		if rw.cells[layerUnit].mark == "B" {
			fmt.Fprintf(r.log, "mutate: %s does not build\n", name)
			for l := range rw.cells {
				rw.cells[l] = cell{mark: "B"}
			}
			return rw
		}
	}
	if run(layerConf) {
		rw.cells[layerConf] = plainCell(r.exec(r.o.confTimeout, goCmd(r.o.confTimeout, "test",
			"-run", "^TestMemstoreConformance$", "./store/mem/")...))
	}
	r.own(rw, a, overlay, goCmd)
	if run(layerSim) || run(layerLin) || run(layerLive) {
		r.simulate(rw, name, goCmd)
	}
	return rw
}

// own runs the own layer of a's mutant: its area's tests, or for an area
// whose own tests are the unit layer's, that layer's cell. For the
// baseline (a nil) it runs every area's own tests, and fails if any does.
func (r *runner) own(rw *row, a *area, overlay string, goCmd func(time.Duration, ...string) []string) {
	if rw.cells[layerOwn].mark != "" {
		return
	}
	one := func(a *area) cell {
		switch {
		case a.own == nil && a.withConformance && !rw.cells[layerUnit].killed():
			return rw.cells[layerConf] // the area's own tests: the unit layer's and its conformance test
		case a.own == nil:
			return rw.cells[layerUnit]
		case a.node:
			dir := overlay
			if dir == "" {
				var err error
				if dir, err = r.nodeBaseline(); err != nil {
					fmt.Fprintf(r.log, "mutate: copying wasm/js for the baseline: %v\n", err)
					return cell{mark: "B"}
				}
			}
			return plainCell(r.exec(a.timeout, append(slices.Clone(a.own), dir+string(filepath.Separator))...))
		}
		return plainCell(r.exec(a.timeout, goCmd(a.timeout, a.own[1:]...)...)) // own[0] is "go": goCmd puts it back, with the overlay
	}
	if a != nil {
		rw.cells[layerOwn] = one(a)
		return
	}
	rw.cells[layerOwn] = cell{mark: "."}
	for _, n := range areaOrder {
		if c := one(areas[n]); c.mark != "." && c.mark != "-" {
			rw.cells[layerOwn] = cell{mark: c.mark, detail: n}
			return
		}
	}
}

// simulate builds simrun with the mutant and runs the simulator layers.
func (r *runner) simulate(rw *row, name string, goCmd func(time.Duration, ...string) []string) {
	bin := filepath.Join(r.tmp, "simrun-"+name)
	defer os.Remove(bin)
	if res := r.exec(3*time.Minute, goCmd(0, "build", "-o", bin, "./cmd/simrun")...); res.code != 0 {
		fmt.Fprintf(r.log, "mutate: %s: simrun does not build:\n%s\n", name, tail(res.out, 20))
		rw.cells[layerSim], rw.cells[layerLin], rw.cells[layerLive] = cell{mark: "B"}, cell{mark: "B"}, cell{mark: "B"}
		return
	}
	if rw.cells[layerSim].mark == "" {
		rw.cells[layerSim] = simCell(r.exec(r.o.simTimeout, bin, "-seeds", strconv.Itoa(r.o.seeds), "-lincheck=false"))
	}
	if rw.cells[layerLin].mark == "" {
		rw.cells[layerLin] = simCell(r.exec(r.o.simTimeout, bin, "-seeds", strconv.Itoa(r.o.linSeeds), "-lincheck"))
	}
	if rw.cells[layerLive].mark == "" {
		rw.cells[layerLive] = r.live(bin)
	}
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
	// The Node tests that need the repository beside the package (store/pgx's
	// migrations, cmd/lincheck) find it here, not next to a mutant's copy.
	cmd.Env = append(os.Environ(), "IDEM_REPO_ROOT="+r.root)
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
