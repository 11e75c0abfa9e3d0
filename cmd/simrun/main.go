// Command simrun runs idem's deterministic fault simulation: see package sim.
// It only wires flags to sim and writes what sim returns.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/idemkit/idem/sim"
	wasmcore "github.com/idemkit/idem/wasm"
)

func main() {
	// A run's live heap is a few megabytes per worker, and the simulator
	// allocates fast: a higher collection target than the default trades
	// memory for run time, up to a point. Past it the heap outgrows the
	// processor's caches and every new span is a cache miss and a page
	// fault: on 300 seeds of sim-long's settings, alternated, 800 took
	// 0.88 of 3200's wall time, 400 0.91 (BENCHMARKS.md). GOGC, when set,
	// still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(800)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// flags are simrun's command line, before they are checked.
type flags struct {
	cfg                                sim.Config
	seed                               uint64
	seeds, workers                     int
	faults, baseline, storePath, swarm string
	asJSON, verbose, live, wasmCore    bool
	tracePath, htmlPath                string
	storeKind, redisAddrs              string
	// openLive opens a live run's store (-store redis); nil for the memory store.
	openLive  sim.OpenLiveStore
	closeLive func()
}

// printedError is an error the flag package has already printed, with the
// usage.
type printedError struct{ error }

func (e printedError) Unwrap() error { return e.error }

// parse reads args. An error of the flag package's own (flag.ErrHelp for -h
// included) comes as a printedError.
func parse(args []string, stderr io.Writer) (*flags, error) {
	f := &flags{cfg: sim.ConfigDefault()}
	cfg := &f.cfg
	fs := flag.NewFlagSet("simrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Uint64Var(&f.seed, "seed", 1, "first seed; 0 draws a random one (printed)")
	fs.IntVar(&f.seeds, "seeds", 1, "number of consecutive seeds, run in parallel across cores")
	fs.IntVar(&cfg.Requests, "requests", cfg.Requests, "payment requests per seed")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "clients per seed")
	fs.IntVar(&cfg.Servers, "servers", cfg.Servers, "API servers per seed")
	fs.StringVar(&f.faults, "faults", "all", "faults to inject: all, none, or a comma list of "+strings.Join(faultNames(), ","))
	fs.StringVar(&f.baseline, "baseline", "correct", "how servers use the store: correct, or an anti-pattern that must be caught: "+strings.Join(baselineNames()[1:], ", "))
	fs.StringVar(&f.storePath, "store-path", "drawn", "how the executor reaches the memory store: drawn (per seed), compare-and-set (load, then a conditional write) or apply (its single-lock fast path)")
	fs.StringVar(&f.swarm, "swarm", "", "true: draw per seed which faults fire and how often; false: every fault at -fault-rate (default: true for -seeds > 1)")
	fs.Float64Var(&cfg.FaultRate[0], "fault-rate", sim.FaultRateDefault, "each fault's probability per chance, without swarm")
	fs.BoolVar(&cfg.GatewayIdempotent, "gateway-idempotent", false, "the gateway dedupes charges by key itself (off: idem alone must prevent duplicates)")
	fs.BoolVar(&cfg.DrawLifecycle, "draw-lifecycle", true, "draw each seed's lifecycle policy (lease, TTL, retention, expiry and fail modes, reconcile limits) from its seed")
	fs.BoolVar(&cfg.LinCheck, "lincheck", cfg.LinCheck, "also check each run's store history for linearizability (package linearizability)")
	fs.BoolVar(&f.asJSON, "json", false, "print a machine-readable summary instead of text")
	fs.StringVar(&f.tracePath, "trace", "", "write every event of one seed (the first violating one, else the first) as JSONL to this file")
	fs.StringVar(&f.htmlPath, "html", "", "write a page drawing one scope's timeline (the violating scope, else the busiest) to this file")
	fs.BoolVar(&f.verbose, "v", false, "print a line for every seed, not only those with violations")
	fs.IntVar(&f.workers, "workers", 0, "goroutines running seeds (default: one per CPU)")
	fs.BoolVar(&f.wasmCore, "wasm-core", false, "step every event through the core compiled to wasm (package wasmcore, under wazero) instead of the native one: the output must be the same, byte for byte")
	fs.BoolVar(&f.live, "live", false, "run the workload in real time through the executor's own Do (durations divided by 20), one seed after the other, with the same checkers; not reproducible by seed")
	fs.StringVar(&f.storeKind, "store", "mem", "the store: mem (the memory store, embedded) or redis (a Redis server's, with -redis; -live only)")
	fs.StringVar(&f.redisAddrs, "redis", "", "the Redis server host:port, or a cluster's nodes comma-separated, for -store redis (each seed uses keys of its own, removed at its end)")
	if err := fs.Parse(args); err != nil {
		return nil, printedError{err}
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return f, nil
}

// configure checks f and completes its config; a random seed is printed.
func (f *flags) configure(stderr io.Writer) error {
	cfg := &f.cfg
	if f.seeds < 1 {
		return fmt.Errorf("-seeds %d: want at least 1", f.seeds)
	}
	var err error
	if cfg.Faults, err = sim.ParseFaults(f.faults); err != nil {
		return fmt.Errorf("-faults: %v", err)
	}
	if cfg.Baseline, err = sim.ParseBaseline(f.baseline); err != nil {
		return fmt.Errorf("-baseline: %v", err)
	}
	if cfg.StorePath, err = sim.ParseStorePath(f.storePath); err != nil {
		return fmt.Errorf("-store-path: %v", err)
	}
	switch f.swarm {
	case "":
		cfg.Swarm = f.seeds > 1
	case "true", "1":
		cfg.Swarm = true
	case "false", "0":
		cfg.Swarm = false
	default:
		return fmt.Errorf("-swarm %q: want true or false", f.swarm)
	}
	for i := range cfg.FaultRate {
		cfg.FaultRate[i] = cfg.FaultRate[0]
	}
	if f.wasmCore {
		host, err := wasmcore.New(context.Background())
		if err != nil {
			return fmt.Errorf("-wasm-core: %v", err)
		}
		cfg.Step, cfg.StepName = host.Step, "wasm"
	}
	if err := f.configureStore(); err != nil {
		return err
	}
	cfg.Seed = f.seed
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()>>1 + 1
		fmt.Fprintf(stderr, "simrun: random seed %d\n", cfg.Seed)
	}
	return cfg.Validate()
}

// configureStore opens the store -store names.
func (f *flags) configureStore() error {
	switch f.storeKind {
	case "mem":
		return nil
	case "redis":
		if !f.live {
			return errors.New("-store redis: a Redis store runs on real time: add -live")
		}
		open, closeLive, err := openRedis(f.redisAddrs)
		if err != nil {
			return err
		}
		f.openLive, f.closeLive = open, closeLive
		f.cfg.LiveStore = "-store redis -redis " + f.redisAddrs
		return nil
	}
	return fmt.Errorf("-store %q: want mem or redis", f.storeKind)
}

// run is simrun: 0 when every invariant held, 1 when one broke, 2 for bad flags.
func run(args []string, stdout, stderr io.Writer) int {
	f, err := parse(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0 // asked for the flags, which parse printed
	case errors.As(err, new(printedError)):
		return 2 // the flag package said why
	case err == nil:
		err = f.configure(stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "simrun: %v\n", err)
		return 2
	}
	if f.closeLive != nil {
		defer f.closeLive()
	}
	prog := newProgress(stderr, f.seeds)
	var reports []*sim.Report
	if f.live {
		reports, err = sim.RunLiveSeeds(f.cfg, f.seeds, f.openLive, prog.update) // one seed at a time: a live run is real time
	} else {
		reports, err = sim.RunSeeds(f.cfg, f.seeds, f.workers, prog.update)
	}
	prog.end()
	if err != nil {
		fmt.Fprintf(stderr, "simrun: %v\n", err)
		return 2
	}
	if err := f.write(stdout, stderr, reports); err != nil {
		fmt.Fprintf(stderr, "simrun: %v\n", err)
		return 1
	}
	for _, r := range reports {
		if len(r.Violations) > 0 {
			return 1
		}
	}
	return 0
}

// write prints the summary and writes the trace and the page asked for.
func (f *flags) write(stdout, stderr io.Writer, reports []*sim.Report) error {
	if f.asJSON {
		if err := sim.WriteJSON(stdout, f.cfg, f.seeds, reports, f.verbose); err != nil {
			return err
		}
	} else {
		sim.WriteText(stdout, f.cfg, f.seeds, reports, f.verbose)
	}
	if f.tracePath != "" || f.htmlPath != "" {
		return writeTraces(f.cfg, reports, f.tracePath, f.htmlPath, stderr)
	}
	return nil
}

func baselineNames() []string {
	var names []string
	for _, p := range sim.Baselines() {
		names = append(names, p.String())
	}
	return names
}

func faultNames() []string {
	var names []string
	for _, f := range sim.Faults() {
		names = append(names, f.String())
	}
	return names
}

// writeTraces writes the trace and the page of the first violating seed,
// else of the first seed. Runs keep no trace, so that one is run again: the
// same seed gives the same run.
func writeTraces(cfg sim.Config, reports []*sim.Report, tracePath, htmlPath string, stderr io.Writer) error {
	cfg.Seed = reports[0].Config.Seed
	for _, r := range reports {
		if len(r.Violations) > 0 {
			cfg.Seed = r.Config.Seed
			break
		}
	}
	pick, err := sim.Run(cfg)
	if err != nil {
		return err
	}
	write := func(path string, f func(io.Writer) error) error {
		file, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := f(file); err != nil {
			file.Close()
			return err
		}
		if err := file.Close(); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "simrun: wrote %s (seed %d)\n", path, pick.Config.Seed)
		return nil
	}
	if tracePath != "" {
		if err := write(tracePath, func(w io.Writer) error { return sim.WriteTrace(w, pick) }); err != nil {
			return err
		}
	}
	if htmlPath != "" {
		return write(htmlPath, func(w io.Writer) error { return sim.WriteHTML(w, pick, -1) })
	}
	return nil
}

// progress prints "seeds N/M" on stderr once a run has taken more than a
// second: on a terminal one line rewritten at most 4 times a second; to
// anything else (a CI log, a file) a plain line every 10 seconds, so that a
// log holds no carriage returns and no thousand lines.
type progress struct {
	mu      sync.Mutex
	out     io.Writer
	tty     bool
	total   int
	start   time.Time
	last    time.Time
	printed bool
}

func newProgress(out io.Writer, total int) *progress {
	return &progress{out: out, tty: isTerminal(out), total: total, start: time.Now()}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progress) update(done int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	every := 10 * time.Second
	if p.tty {
		every = 250 * time.Millisecond
	}
	if now.Sub(p.start) < time.Second || now.Sub(p.last) < every {
		return
	}
	p.last = now
	p.printed = true
	line := fmt.Sprintf("simrun: seeds %d/%d (%d%%), %v", done, p.total, 100*done/p.total, now.Sub(p.start).Round(100*time.Millisecond))
	if p.tty {
		fmt.Fprint(p.out, "\r"+line)
	} else {
		fmt.Fprintln(p.out, line)
	}
}

func (p *progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.printed {
		if p.tty {
			fmt.Fprint(p.out, "\r")
		}
		fmt.Fprintf(p.out, "simrun: seeds %d/%d in %v\n", p.total, p.total, time.Since(p.start).Round(100*time.Millisecond))
	}
}
