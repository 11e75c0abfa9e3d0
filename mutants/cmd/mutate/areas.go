package main

import (
	"path/filepath"
	"strings"
	"time"
)

// area is the part of the code a mutant's file belongs to. Each area has
// its own tests, the "own" column of the matrix: issue 20 §7 holds every
// area's tests to killing at least ownTarget of its own non-equivalent
// mutants. The simulator and the memory store's conformance suite reach
// only some areas; a layer that cannot reach a mutant's area is not run on
// it (its cell reads "~", in no total).
type area struct {
	name string
	// own is the command of the area's own tests, run in the module root
	// with the mutant in place; nil for an area whose own tests are the
	// unit layer's (its cell is the unit cell).
	own     []string
	timeout time.Duration
	// node: the area's own tests are Node's, run on a copy of wasm/js with
	// the mutated file (the go command's overlay does not reach Node).
	node bool
	// withConformance: the area's own tests also include the memory
	// store's conformance test (TestMemstoreConformance is the memory
	// store's own test, which the unit layer leaves to its own column).
	withConformance bool
	// reach lists the shared layers that exercise the area.
	reach [layerCount]bool
}

// ownTarget is the share of an area's non-equivalent mutants its own tests
// must kill (issue 20 §7).
const ownTarget = 0.9

var (
	simReach  = [layerCount]bool{layerUnit: true, layerOwn: true, layerConf: true, layerSim: true, layerLin: true, layerLive: true}
	ownReach  = [layerCount]bool{layerOwn: true}
	confReach = [layerCount]bool{layerOwn: true, layerConf: true}
	// refReach: the reference model is what core's property test (the
	// unit layer) and the simulator's lifecycle checker (in every
	// simulator run, -live too: its sweeper's and reconciler's writes)
	// hold the core to; nothing else runs it.
	refReach = [layerCount]bool{layerUnit: true, layerOwn: true, layerSim: true, layerLin: true, layerLive: true}
)

// areas are every area, by name; areaOf says which a file is in.
var areas = map[string]*area{
	"core":      {name: "core", reach: simReach},
	"store":     {name: "store", reach: simReach},
	"mem":       {name: "mem", reach: simReach, withConformance: true},
	"exec":      {name: "exec", reach: simReach},
	"fp":        {name: "fp", reach: simReach},
	"pgx":       {name: "pgx", own: []string{"go", "test", "./store/pgx/"}, timeout: 6 * time.Minute, reach: ownReach},
	"storetest": {name: "storetest", own: []string{"go", "test", "./store/storetest/"}, timeout: 4 * time.Minute, reach: confReach},
	"http":      {name: "http", own: []string{"go", "test", "./idemhttp/", "./examples/payments/"}, timeout: 4 * time.Minute, reach: ownReach},
	"wasm":      {name: "wasm", own: []string{"go", "test", "./wasm/"}, timeout: 4 * time.Minute, reach: ownReach},
	"wasm-js":   {name: "wasm-js", own: []string{"node", "--test"}, node: true, timeout: 3 * time.Minute, reach: ownReach},
	"sim":       {name: "sim", own: []string{"go", "test", "./sim/", "./cmd/simrun/", "./linearizability/"}, timeout: 6 * time.Minute, reach: ownReach},
	"ref":       {name: "ref", reach: refReach},
}

// areaOrder is the order areas are reported in.
var areaOrder = []string{"core", "store", "mem", "exec", "fp", "pgx", "storetest", "http", "wasm", "wasm-js", "sim", "ref"}

// areaOf is the area of file, a path from the module root.
func areaOf(file string) *area {
	dir := filepath.ToSlash(filepath.Dir(file))
	switch {
	case dir == "." || dir == "flow": // Do and the Flow it hosts
		return areas["exec"]
	case strings.HasPrefix(dir, "core"):
		return areas["core"]
	case strings.HasPrefix(dir, "internal/refmodel"):
		return areas["ref"]
	case strings.HasPrefix(dir, "store/mem"):
		return areas["mem"]
	case strings.HasPrefix(dir, "store/pgx"):
		return areas["pgx"]
	case strings.HasPrefix(dir, "store/storetest"):
		return areas["storetest"]
	case dir == "store":
		return areas["store"]
	case strings.HasPrefix(dir, "fingerprint"):
		return areas["fp"]
	case strings.HasPrefix(dir, "idemhttp"), strings.HasPrefix(dir, "examples"):
		return areas["http"]
	case strings.HasPrefix(dir, "wasm/js"):
		return areas["wasm-js"]
	case strings.HasPrefix(dir, "wasm"):
		return areas["wasm"]
	case strings.HasPrefix(dir, "sim"), strings.HasPrefix(dir, "cmd/simrun"), strings.HasPrefix(dir, "linearizability"):
		return areas["sim"]
	}
	return nil
}
