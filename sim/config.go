package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/idemkit/idem/core"
)

// Fault is one kind of failure the simulator injects (SPEC §8).
type Fault uint8

const (
	FaultCrash                Fault = iota // a server dies at a step boundary and restarts later
	FaultLostRequest                       // a client's request never reaches the server
	FaultLostResponse                      // the server's answer never reaches the client
	FaultGatewayTimeoutBefore              // the gateway request is lost: no charge, the caller times out
	FaultGatewayTimeoutAfter               // the gateway charges, its answer is lost: the caller times out
	FaultGatewayReject                     // the gateway declines the card (a business outcome, 402)
	FaultGatewayRefuse                     // the gateway refuses the connection: definitely not executed
	FaultGatewaySlow                       // the gateway answers 20 times slower
	FaultStoreErrorBefore                  // a store call fails before it applies
	FaultStoreErrorAfter                   // a store write applies, then the caller hears an error
	FaultStoreLatency                      // a store call takes 20 times longer
	FaultPause                             // a server freezes for longer than the lease (a zombie owner)
	FaultDisconnect                        // the client hangs up before its answer came: its servers' contexts are done, at any step
	FaultDuplicate                         // a client sends the same request to two servers at once
	FaultKeyMisuse                         // a buggy client (a quarter of them) reuses a key for another payload
	FaultGatewayOddAnswer                  // the gateway answers a 502 business answer, an empty body, or a large one
	FaultGatewayStall                      // the request to the gateway stalls in transit for 0.5 to 2 leases: it lands after its attempt was marked unknown
	FaultHeartbeatStall                    // a heartbeat is delayed by 1 to 2 leases while the action's gateway call is in flight
	FaultCheckBad                          // the reconciler's look at the ledger errs, or returns a finding that cannot be stored
	FaultStoreClockBack                    // the store's clock steps back by up to 100 ms, 250 ms in all (a database clock corrected)
	FaultBadInput                          // a key with a space at an end, or a server (re)started with a policy out of range
	FaultStoreTokenStale                   // a Load hands out the record's own token as fresh (a driver whose token sequence lags: restored, or not persisted)
	FaultCompleteInDiffers                 // an action completes in its own transaction (Attempt.CompleteIn), then returns that response with a header value changed
	FaultStoreReject                       // the store rejects, for good, every write of a response over 32 KiB (a column narrower than the policy's limit) until the faults stop
	FaultActionPanic                       // the action panics after its gateway call answered: recorded unknown, then raised again
	FaultActionDeaf                        // told its lease is lost, the action ignores its context and returns what its gateway call answers: a late owner
	FaultOperatorEvict                     // an operator looks at a recent request's record and evicts it a while later by the token read then (idemctl show, evict)
	faultCount
)

var faultNames = [faultCount]string{
	"crash", "lost_request", "lost_response", "gateway_timeout_before", "gateway_timeout_after",
	"gateway_reject", "gateway_refuse", "gateway_slow", "store_error_before", "store_error_after",
	"store_latency", "pause", "disconnect", "duplicate", "key_misuse", "gateway_odd_answer",
	"gateway_stall", "heartbeat_stall", "check_bad", "store_clock_back", "bad_input",
	"store_token_stale", "complete_in_differs", "store_reject", "action_panic", "action_deaf",
	"operator_evict",
}

func (f Fault) String() string {
	if f < faultCount {
		return faultNames[f]
	}
	return fmt.Sprintf("fault(%d)", uint8(f))
}

// Faults lists every fault in order.
func Faults() []Fault {
	fs := make([]Fault, faultCount)
	for i := range fs {
		fs[i] = Fault(i)
	}
	return fs
}

// FaultSet is which faults are on.
type FaultSet uint32

// AllFaults has every fault on.
const AllFaults FaultSet = 1<<faultCount - 1

func (s FaultSet) Has(f Fault) bool { return s&(1<<f) != 0 }

// ParseFaults reads "all", "none" or a comma list of fault names.
func ParseFaults(list string) (FaultSet, error) {
	switch strings.TrimSpace(list) {
	case "all":
		return AllFaults, nil
	case "none", "":
		return 0, nil
	}
	var s FaultSet
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		found := false
		for f, n := range faultNames {
			if n == name {
				s |= 1 << f
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown fault %q (known: all, none, %s)", name, strings.Join(faultNames[:], ", "))
		}
	}
	return s, nil
}

func (s FaultSet) String() string {
	switch s {
	case AllFaults:
		return "all"
	case 0:
		return "none"
	}
	var names []string
	for _, f := range Faults() {
		if s.Has(f) {
			names = append(names, f.String())
		}
	}
	return strings.Join(names, ",")
}

// Config is every parameter of one run. One seed drives every random choice.
type Config struct {
	Seed     uint64
	Requests int // logical payment requests, over all clients
	Clients  int
	Servers  int
	Baseline Baseline
	Faults   FaultSet
	// Swarm draws, from the seed, which of Faults are on and how often, as
	// FoundationDB and TigerBeetle do; otherwise every fault in Faults fires
	// with its FaultRate.
	Swarm     bool
	FaultRate [faultCount]float64

	// Arrival is the fault phase: requests start at random times in it and
	// faults fire only within it; then the world heals.
	Arrival time.Duration

	Lifecycle core.Policy // the executor's policy (shortened leases so a run is quick)

	NetLatencyMin, NetLatencyMax         time.Duration // one way, client <-> server <-> gateway
	StoreLatencyMin, StoreLatencyMax     time.Duration // one store call, round trip
	GatewayLatencyMin, GatewayLatencyMax time.Duration // the gateway's own work
	GatewayTimeout                       time.Duration // the server's timeout on a gateway call
	ClientTimeout                        time.Duration // a client's timeout on one attempt
	ClientBackoffBase, ClientBackoffMax  time.Duration
	RestartDelay                         time.Duration // a crashed server comes back after this
	CrashQuiet                           time.Duration // a restarted server does not crash again for this long
	// BacklogMax is the most arrivals a paused server holds (its accept
	// queue, or a proxy's pending requests for it); past it, arrivals are
	// refused until the pause ends. 0: no bound.
	BacklogMax                 int
	ReconcileEvery, SweepEvery time.Duration
	GatewayIdempotent          bool // the gateway dedupes charges by key (off: idem alone must prevent duplicates)
	// LinCheck records every store call and checks the history against
	// the store's linearizability model (package linearizability). On by
	// default: it costs about twice a run's time (BENCHMARKS.md), and a
	// compare-and-set that ignores the version passes every other checker.
	LinCheck bool
	// StorePath is how servers and workers reach the memory store: drawn
	// per seed, or always one of its two paths.
	StorePath StorePath
	// DrawLifecycle draws each seed's lifecycle policy from its seed,
	// around Lifecycle: leases of 1 to 3 s, TTLs and tombstone retentions
	// short enough that records expire, are pruned and are reused within a
	// run, either expiry and fail mode, and reconcile limits low enough that
	// records are given up to an operator.
	DrawLifecycle bool
	// Step is the core that steps every event (core.Step if nil): another
	// build of it (the wasm module's, simrun -wasm-core) must give a run
	// byte for byte the same. StepName names it in the run's description.
	Step     core.StepFunc
	StepName string
	// LiveStore names, in simrun's flags, the store a live run keeps its
	// world in (RunLiveOn): "-store redis -redis 127.0.0.1:6379", say.
	// Empty for the memory store. The description and the command print it.
	LiveStore string
}

// drawLifecycle is base with the tunables drawn from r.
func drawLifecycle(base core.Policy, r *rand.Rand) core.Policy {
	pick := func(ds ...time.Duration) time.Duration { return ds[r.IntN(len(ds))] }
	p := base
	p.LeaseDuration = pick(time.Second, 2*time.Second, 3*time.Second)
	p.TTL = pick(3*time.Second, 8*time.Second, 30*time.Second, 24*time.Hour)
	p.TombstoneRetention = pick(time.Second, 5*time.Second, time.Hour)
	p.Expiry = core.ExpiryMode(r.IntN(2))
	p.Fail = core.FailMode(r.IntN(2))
	p.InFlightAnswer = core.InFlightAnswer(r.IntN(2))
	p.InFlightWait = pick(0, 200*time.Millisecond)
	p.ReconcileBackoffBase = pick(50*time.Millisecond, 100*time.Millisecond)
	p.ReconcileBackoffMax = pick(time.Second, 2*time.Second)
	p.ReconcileAttemptsMax = []uint32{6, 20, 1000}[r.IntN(3)]
	return p
}

// StorePath is how the executor reaches the memory store.
type StorePath uint8

const (
	// StorePathDrawn: each seed draws one of the two paths below (a
	// baseline that needs loads, naive or lease-reexecute, always takes
	// compare-and-set).
	StorePathDrawn StorePath = iota
	// StorePathCompareAndSet: load, core.Step, then a conditional write: two
	// store calls, between which races and faults can fall.
	StorePathCompareAndSet
	// StorePathApply: the memory store's single-lock Apply (store.Applier),
	// the path production Do takes over it: one store call.
	StorePathApply
	storePathCount
)

var storePathNames = [storePathCount]string{"drawn", "compare-and-set", "apply"}

func (p StorePath) String() string {
	if p < storePathCount {
		return storePathNames[p]
	}
	return fmt.Sprintf("store_path(%d)", uint8(p))
}

// ParseStorePath reads a store path name.
func ParseStorePath(name string) (StorePath, error) {
	for p, n := range storePathNames {
		if n == name {
			return StorePath(p), nil
		}
	}
	return 0, fmt.Errorf("unknown store path %q (known: %s)", name, strings.Join(storePathNames[:], ", "))
}

// fastPath reports whether this seed takes the memory store's Apply,
// drawing it from r when the path is drawn.
func (c *Config) fastPath(r *rand.Rand) bool {
	switch {
	case c.Baseline.casOnly():
		return false
	case c.StorePath == StorePathDrawn:
		return r.IntN(2) == 0
	}
	return c.StorePath == StorePathApply
}

// FaultRateDefault is each fault's probability per chance to fire, when not in swarm mode.
const FaultRateDefault = 0.02

// defaultRequests is the requests a seed sends by default (make sim); the
// convergence bound grows with the requests above it.
const defaultRequests = 200

// ConfigDefault returns the defaults of simrun.
func ConfigDefault() Config {
	p := core.PolicyDefault()
	p.LeaseDuration = 2 * time.Second
	p.InFlightWait = 200 * time.Millisecond
	p.RetryAfter = 100 * time.Millisecond
	p.ReconcileBackoffBase = 100 * time.Millisecond
	p.ReconcileBackoffMax = 2 * time.Second
	p.ReconcileAttemptsMax = 1000
	c := Config{
		Seed:              1,
		Requests:          defaultRequests,
		Clients:           20,
		Servers:           3,
		Baseline:          BaselineCorrect,
		Faults:            AllFaults,
		Swarm:             true,
		DrawLifecycle:     true,
		LinCheck:          true,
		Arrival:           10 * time.Second,
		Lifecycle:         p,
		NetLatencyMin:     500 * time.Microsecond,
		NetLatencyMax:     5 * time.Millisecond,
		StoreLatencyMin:   200 * time.Microsecond,
		StoreLatencyMax:   2 * time.Millisecond,
		GatewayLatencyMin: 5 * time.Millisecond,
		GatewayLatencyMax: 50 * time.Millisecond,
		GatewayTimeout:    300 * time.Millisecond,
		ClientTimeout:     1 * time.Second,
		ClientBackoffBase: 50 * time.Millisecond,
		ClientBackoffMax:  2 * time.Second,
		RestartDelay:      200 * time.Millisecond,
		CrashQuiet:        2 * time.Second,
		BacklogMax:        32,
		ReconcileEvery:    500 * time.Millisecond,
		SweepEvery:        time.Second,
	}
	for f := range c.FaultRate {
		c.FaultRate[f] = FaultRateDefault
	}
	return c
}

// Validate refuses a configuration that cannot run.
func (c *Config) Validate() error {
	switch {
	case c.Requests < 1:
		return fmt.Errorf("requests %d: want at least 1", c.Requests)
	case c.Clients < 1:
		return fmt.Errorf("clients %d: want at least 1", c.Clients)
	case c.Servers < 1:
		return fmt.Errorf("servers %d: want at least 1", c.Servers)
	case c.BacklogMax < 0:
		return fmt.Errorf("backlog %d: want 0 (no bound) or more", c.BacklogMax)
	case c.Baseline >= baselineCount:
		return fmt.Errorf("unknown baseline %v", c.Baseline)
	case c.StorePath >= storePathCount:
		return fmt.Errorf("unknown store path %v", c.StorePath)
	case c.Arrival <= 0:
		return fmt.Errorf("arrival %v: want a positive duration", c.Arrival)
	}
	for f, r := range c.FaultRate {
		if r < 0 || r > 1 || math.IsNaN(r) {
			return fmt.Errorf("fault %v rate %v: want 0..1", Fault(f), r)
		}
	}
	return c.Lifecycle.Validate()
}

// rates is what each fault's probability is for this run: zero for faults
// that are off; in swarm mode, drawn from the seed.
func (c *Config) rates(swarm *rand.Rand) [faultCount]float64 {
	var r [faultCount]float64
	for _, f := range Faults() {
		if !c.Faults.Has(f) {
			continue
		}
		if !c.Swarm {
			r[f] = c.FaultRate[f]
			continue
		}
		// Each fault is on with probability 1/2, at a rate log-uniform in
		// [0.1 %, 10 %]: some seeds are storms of one fault, some are calm.
		if swarm.IntN(2) == 0 {
			r[f] = math.Pow(10, -3+2*swarm.Float64())
		}
	}
	return r
}

// --- The reconcilers' world, drawn per seed (issue 11: the schedules that
// stale findings and long unknown spells need). One contiguous block, so
// that other drawn parameters merge beside it.

// reconcileWorld is how the seed's reconcilers see the ledger.
type reconcileWorld struct {
	// reconcilers run side by side, each on its own ticks: two of them
	// list the same due records, and one's finding can arrive after the
	// other settled the key and a retry re-executed it. Two answer "still
	// unknown" twice as often, so only where the attempt limit allows it.
	reconcilers int
	// slow is, per reconciler, how often its Check takes longer and by how
	// much (a ledger query that hits a cold partition): the key moves on
	// meanwhile. The second reconciler is the slow one: its findings come
	// late, while the first keeps the run converging.
	slow [2]slowCheck
	// ledgerLag is how late the ledger may show what an attempt did:
	// until the attempt's lease end plus the lag, the Check answers still
	// unknown, and records stay unknown past their TTL while clients retry
	// them. Only with reconcile limits the lag cannot exhaust: a record
	// given up to an operator leaves its clients without an answer, which
	// a run may show now and then, not in every seed.
	ledgerLag time.Duration
	// sweepEvery is how often the sweeper runs while the faults last: the
	// config's, or on some seeds five times as seldom (a batch job, or its
	// one instance down), so that leases run out and records stay
	// in_progress for seconds, and late owners write to them before any
	// sweep marked them unknown. Once the faults stop, it runs as often as
	// the config says.
	sweepEvery time.Duration
	rng        *rand.Rand // the stream of the Checks' slowness
}

// slowCheck is how often a reconciler's Check is slow, and how slow.
type slowCheck struct {
	share    float64
	min, max time.Duration
}

// drawReconcileWorld draws the reconcilers' world of seed from a stream
// of its own, so that it changes no other component's draws.
func drawReconcileWorld(seed uint64, p *core.Policy, sweepEvery time.Duration) reconcileWorld {
	component := uint64(0x7ec0) // a sub-seed no other stream uses
	r := rand.New(rand.NewPCG(splitmix(seed^component*0x9e3779b97f4a7c15), splitmix(seed+component)))
	rw := reconcileWorld{reconcilers: 1 + r.IntN(2), rng: r}
	rw.slow[0] = slowCheck{share: []float64{0, 0.02, 0.1}[r.IntN(3)], min: 300 * time.Millisecond, max: 1500 * time.Millisecond}
	rw.slow[1] = slowCheck{share: 0.5, min: 500 * time.Millisecond, max: 3 * time.Second}
	rw.ledgerLag = []time.Duration{0, 0, 0, time.Second, 3 * time.Second}[r.IntN(5)]
	if p.ReconcileAttemptsMax < 20 {
		rw.reconcilers, rw.ledgerLag = 1, 0
	}
	rw.sweepEvery = sweepEvery * time.Duration([]int{1, 1, 1, 5}[r.IntN(4)])
	return rw
}

// checkDelay is how much longer than a network round trip the next Check
// of reconciler i takes.
func (rw *reconcileWorld) checkDelay(i int32) int64 {
	s := &rw.slow[i]
	if s.share == 0 || rw.rng.Float64() >= s.share {
		return 0
	}
	return between(rw.rng, s.min, s.max)
}
