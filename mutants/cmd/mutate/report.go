package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/idemkit/idem/mutants"
)

// row is one mutant's verdicts.
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

// areaTotal is one area's mutants and its own tests' kills.
type areaTotal struct{ real, ownKilled int }

// met reports whether the area's own tests reach the target.
func (a areaTotal) met() bool { return float64(a.ownKilled) >= ownTarget*float64(a.real) }

// totals counts the kills of each layer among the non-equivalent mutants.
type totals struct {
	real, equivalent, equivalentKilled int
	killed, ran                        [layerCount]int // ran: the mutants a layer ran on
	survivors                          [layerCount][]string
	// The simulator's target: the mutants of areas it reaches.
	simReached, simKilled int
	notBySim              []string
	// make sim's (issue 21 §2): the lifecycle's and the executor's
	// mutants (areas core, store and exec) that the simulator with make
	// sim's flags kills (the lincheck column: -lincheck is on by default;
	// make mutants runs it on make sim's 500 seeds).
	lifeExec, lifeExecKilled int
	notByMakeSim             []string
	// The conformance suite's: every store mutant (store/, store/mem).
	store, storeConfKill int
	storeNotByConf       []string
	byArea               map[string]*areaTotal
	survivedAll          []string
}

func count(rows []*row) totals {
	t := totals{byArea: map[string]*areaTotal{}}
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
			case c.mark == "-" || c.mark == "~":
				continue
			case c.killed():
				t.killed[l]++
			default:
				t.survivors[l] = append(t.survivors[l], rw.m.ID)
			}
			t.ran[l]++
		}
		a := areaOf(rw.m.File)
		at := t.byArea[a.name]
		if at == nil {
			at = &areaTotal{}
			t.byArea[a.name] = at
		}
		at.real++
		if rw.cells[layerOwn].killed() {
			at.ownKilled++
		}
		if a.reach[layerSim] {
			t.simReached++
			if rw.killedBySim() {
				t.simKilled++
			} else {
				t.notBySim = append(t.notBySim, rw.m.ID)
			}
		}
		if a.name == "core" || a.name == "store" || a.name == "exec" {
			t.lifeExec++
			if rw.cells[layerLin].killed() {
				t.lifeExecKilled++
			} else {
				t.notByMakeSim = append(t.notByMakeSim, rw.m.ID)
			}
		}
		if a.name == "store" || a.name == "mem" {
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

// makeSimTarget is the share of the lifecycle's and the executor's
// mutants the simulator must kill with make sim's own flags (issue 21 §2).
const makeSimTarget = 0.9

func (t *totals) makeSimMet() bool {
	return float64(t.lifeExecKilled) >= makeSimTarget*float64(t.lifeExec)
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// areasMet says whether every area's own tests meet the target.
func (t *totals) areasMet() bool {
	for _, a := range t.byArea {
		if !a.met() {
			return false
		}
	}
	return true
}

func writeText(w io.Writer, rows []*row, o *options, elapsed time.Duration) {
	fmt.Fprintf(w, "\nkill matrix: %d mutants; %s; %v\n\n", len(rows), o.describe(), elapsed.Round(time.Second))
	fmt.Fprintf(w, "%-40s %-16s %-6s %-12s %-18s %-18s %-18s\n", "mutant", "unit", "own", "conformance", "sim", "lincheck", "live")
	for _, rw := range rows {
		id := rw.m.ID
		if rw.m.Equivalent != "" {
			id += " (eq)"
		}
		c := rw.cells
		fmt.Fprintf(w, "%-40s %-16s %-6s %-12s %-18s %-18s %-18s\n", id, c[0], c[1], c[2], c[3], c[4], c[5])
	}
	t := count(rows)
	fmt.Fprintf(w, "\ntotals over %d non-equivalent mutants (%d equivalent, %d of them killed):\n", t.real, t.equivalent, t.equivalentKilled)
	for l := range layerCount {
		fmt.Fprintf(w, "  %-12s %3d killed, %3d survived\n", layerNames[l], t.killed[l], t.ran[l]-t.killed[l])
	}
	fmt.Fprintf(w, "  %-12s %3d killed, %3d survived (sim, lincheck or live, of the areas it reaches)\n", "simulator", t.simKilled, t.simReached-t.simKilled)
	fmt.Fprintf(w, "\nown tests by area (target: %.0f %% of each area's non-equivalent mutants):\n", 100*ownTarget)
	for _, n := range areaOrder {
		if a := t.byArea[n]; a != nil {
			fmt.Fprintf(w, "  %-10s %3d of %3d killed (%s)\n", n, a.ownKilled, a.real, met(a.met()))
		}
	}
	fmt.Fprintf(w, "\ntargets:\n")
	fmt.Fprintf(w, "  every area's own tests kill %.0f %% of its mutants: %s\n", 100*ownTarget, met(t.areasMet()))
	fmt.Fprintf(w, "  every non-equivalent mutant the simulator reaches killed by it: %s (%d/%d)\n", met(len(t.notBySim) == 0), t.simKilled, t.simReached)
	fmt.Fprintf(w, "  the simulator with make sim's flags (lincheck, %d seeds) kills %.0f %% of the lifecycle's and executor's mutants: %s (%d/%d)\n",
		o.linSeeds, 100*makeSimTarget, met(t.makeSimMet()), t.lifeExecKilled, t.lifeExec)
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
	list("lifecycle and executor mutants make sim's flags do not kill", t.notByMakeSim)
	list("store mutants not killed by conformance", t.storeNotByConf)
	list("survive every layer", t.survivedAll)
}

func writeMarkdown(w io.Writer, rows []*row, o *options, elapsed time.Duration) {
	fmt.Fprintf(w, "%d mutants; %s; the run took %v.\n\n", len(rows), o.describe(), elapsed.Round(time.Second))
	fmt.Fprintf(w, "| mutant | file | bug planted | unit | own | conformance | sim | lincheck | live |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, rw := range rows {
		desc := rw.m.Desc
		if rw.m.Equivalent != "" {
			desc = "**equivalent**: " + desc
		}
		c := rw.cells
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s |\n", rw.m.ID, rw.m.File, strings.ReplaceAll(desc, "|", "\\|"),
			c[0], c[1], c[2], c[3], c[4], c[5])
	}
	t := count(rows)
	fmt.Fprintf(w, "\n| layer | killed | survived |\n|---|---|---|\n")
	for l := range layerCount {
		fmt.Fprintf(w, "| %s | %d | %d |\n", layerNames[l], t.killed[l], t.ran[l]-t.killed[l])
	}
	fmt.Fprintf(w, "| simulator (sim, lincheck or live) | %d | %d |\n", t.simKilled, t.simReached-t.simKilled)
	fmt.Fprintf(w, "\n| area | own tests kill | target %.0f %% |\n|---|---|---|\n", 100*ownTarget)
	for _, n := range areaOrder {
		if a := t.byArea[n]; a != nil {
			fmt.Fprintf(w, "| %s | %d of %d | %s |\n", n, a.ownKilled, a.real, met(a.met()))
		}
	}
	fmt.Fprintf(w, "\nThe simulator with make sim's flags (the lincheck column, %d seeds) kills %d of the %d lifecycle and executor mutants (areas core, store, exec): %s (target %.0f %%).\n",
		o.linSeeds, t.lifeExecKilled, t.lifeExec, met(t.makeSimMet()), 100*makeSimTarget)
	fmt.Fprintf(w, "\nTotals over the %d non-equivalent mutants; the %d equivalent ones (%d killed) count in none.\n", t.real, t.equivalent, t.equivalentKilled)
}
