package linearizability

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

var (
	fpA = core.Fingerprint(sha256.Sum256([]byte("linearizability: request A")))
	fpB = core.Fingerprint(sha256.Sum256([]byte("linearizability: request B")))
)

// responses are the outcomes the stresses store: small, distinct, one with
// headers, one a business refusal.
var responses = []core.Response{
	{StatusCode: 201, Headers: []core.Header{{Name: "Content-Type", Value: "application/json"}}, Body: []byte(`{"paymentId":"p-1"}`), SchemaVersion: 1},
	{StatusCode: 402, Body: []byte(`{"error":"card_declined"}`), SchemaVersion: 1},
	{StatusCode: 200, Body: []byte(`ok`)},
}

// newHistorySpec draws the scopes of one history: windows sets of
// cfg.scopes scopes, which the goroutines go through together, so that keys
// that have settled give way to fresh ones.
func newHistorySpec(cfg *config, name string, index, windows int) *historySpec {
	h := fnv.New64a()
	h.Write([]byte(name))
	seed := cfg.seed ^ h.Sum64()
	rng := rand.New(rand.NewPCG(seed, uint64(index)))
	prefix := fmt.Sprintf("%08x", rng.Uint32())
	spec := &historySpec{cfg: cfg, seed: seed, index: index, windows: windows, visible: map[core.Scope]bool{}}
	for i := range cfg.scopes * windows {
		sc := core.Scope{Tenant: "lin", Principal: "p-" + name, UseCase: "lin." + name,
			Key: fmt.Sprintf("%s-%06d-%03d-key", prefix, index, i/2)}
		if i%2 == 1 {
			// The same key under another principal: an unrelated record that
			// a driver indexing by key alone would mix up.
			sc.Principal = "q-" + name
		}
		spec.scopes = append(spec.scopes, sc)
		spec.visible[sc] = true
	}
	return spec
}

// scope picks a scope for operation i of n of one goroutine: one of the
// cfg.scopes scopes of the window that i is in.
func (h *historySpec) scope(rng *rand.Rand, i, n int) core.Scope {
	w := 0
	if n > 0 {
		w = min(i*h.windows/n, h.windows-1)
	}
	return h.scopes[w*h.cfg.scopes+rng.IntN(h.cfg.scopes)]
}

// rng is goroutine g's source of choices in this history.
func (h *historySpec) rng(g int) *rand.Rand {
	return rand.New(rand.NewPCG(h.seed, uint64(h.index)<<16|uint64(g)))
}

// opsOf splits the history's operations among its goroutines.
func (h *historySpec) opsOf(g, total int) int {
	n := total / h.cfg.goroutines
	if g < total%h.cfg.goroutines {
		n++
	}
	return n
}

// maybeDeadline gives about one operation in 40 a deadline of a few
// microseconds, which may expire between the calls of one operation (or
// inside one, on a remote store): the indeterminate endings the models know.
func maybeDeadline(ctx context.Context, rng *rand.Rand) (context.Context, context.CancelFunc) {
	if rng.IntN(40) == 0 {
		return context.WithTimeout(ctx, time.Duration(rng.IntN(30))*time.Microsecond)
	}
	return ctx, func() {}
}

// maybeYield widens the window between a read and the write based on it.
func maybeYield(rng *rand.Rand) {
	switch r := rng.IntN(100); {
	case r < 10:
		runtime.Gosched()
	case r < 13:
		time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
	}
}

// goAll runs f for each of n goroutines, released together. Each calls
// round before each operation: a barrier that releases all the goroutines
// at once, so that their operations meet on the same scopes at the same
// instant, on every core.
func goAll(n int, f func(g int, round func())) {
	b := &barrier{parties: n}
	b.cond = sync.NewCond(&b.mu)
	var wg sync.WaitGroup
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer b.leave()
			f(g, b.wait)
		}()
	}
	wg.Wait()
}

// barrier is a reusable barrier whose goroutines may leave it.
type barrier struct {
	mu      sync.Mutex
	cond    *sync.Cond
	parties int
	arrived int
	gen     uint64
}

func (b *barrier) wait() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.arrived++
	if b.arrived >= b.parties {
		b.next()
		return
	}
	for gen := b.gen; gen == b.gen; {
		b.cond.Wait()
	}
}

func (b *barrier) leave() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.parties--
	if b.parties > 0 && b.arrived >= b.parties {
		b.next()
	}
}

func (b *barrier) next() {
	b.arrived = 0
	b.gen++
	b.cond.Broadcast()
}

// overlap is the share of operations whose interval meets another's on the
// same scope: how much concurrency the checker saw.
func overlap[T any](ops []T, key func(*T) (core.Scope, int64, int64)) string {
	type iv struct{ a, b int64 }
	by := map[core.Scope][]iv{}
	for i := range ops {
		sc, a, b := key(&ops[i])
		by[sc] = append(by[sc], iv{a, b})
	}
	n := 0
	for _, ivs := range by {
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].a < ivs[j].a })
		met := make([]bool, len(ivs))
		end, who := int64(-1<<63), -1
		for i, x := range ivs {
			if who >= 0 && x.a <= end {
				met[i], met[who] = true, true
			}
			if x.b > end {
				end, who = x.b, i
			}
		}
		for _, m := range met {
			if m {
				n++
			}
		}
	}
	if len(ops) == 0 {
		return "no operations"
	}
	return fmt.Sprintf("%d of %d operations (%d%%) overlapped another on their scope", n, len(ops), 100*n/len(ops))
}

func storeOverlap(ops []StoreOperation) string {
	if len(ops) == 0 {
		return ""
	}
	return "store: " + overlap(ops, func(o *StoreOperation) (core.Scope, int64, int64) { return o.Scope, o.Call, o.Return })
}

func lifeOverlap(ops []LifecycleOperation) string {
	if len(ops) == 0 {
		return ""
	}
	return "lifecycle: " + overlap(ops, func(o *LifecycleOperation) (core.Scope, int64, int64) { return o.Scope, o.Call, o.Return })
}

// counter counts named things from many goroutines, for the summaries.
type counter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counter) add(k string) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[k]++
	c.mu.Unlock()
}

func (c *counter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.m))
	for k := range c.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, c.m[k])
	}
	return b.String()
}

// --- stress/store -----------------------------------------------------------

// stressStore has goroutines call the Store methods directly. Most writes are
// what the core would write from the goroutine's last read of the scope
// (often stale by then); the others are edge cases: inserts over a record,
// compare-and-set and delete with a wrong precondition, deletes of a
// deleted record.
func stressStore(ctx context.Context, s store.Store, h *historySpec) (*historyOut, error) {
	rec := NewRecorder(s, nil)
	var seen counter
	goAll(h.cfg.goroutines, func(g int, round func()) {
		storeWorker(ctx, rec.Client(g), h, g, h.opsOf(g, h.cfg.operations), &seen, round)
	})
	out := &historyOut{store: rec.StoreHistory()}
	out.summaries = append(out.summaries, "store calls (method ending): "+seen.String(), storeOverlap(out.store))
	return out, nil
}

func storeWorker(ctx context.Context, c store.Store, h *historySpec, g, ops int, seen *counter, round func()) {
	rng := h.rng(g)
	views := map[core.Scope]*store.Snapshot{}
	p := core.DefaultPolicy()
	p.LeaseDuration, p.TTL = time.Millisecond, 2*time.Millisecond
	p.ReconcileBackoffBase, p.ReconcileBackoffCap, p.ReconcileAttemptsMax = time.Millisecond, 4*time.Millisecond, 3
	for done := 0; done < ops; done++ { // one store call per iteration
		sc := h.scope(rng, done, ops)
		round()
		cctx, cancel := maybeDeadline(ctx, rng)
		v := views[sc]
		r := rng.IntN(100)
		var next core.Record
		var w core.Write
		write := false
		if v != nil && r >= 30 {
			if r < 85 {
				next, w, write = coreWrite(rng, v, &p)
			}
			if !write {
				// An edge case; one that needs a fresh token loads instead.
				next, w, write = edgeWrite(rng, v, &p)
			}
		}
		if write {
			maybeYield(rng)
			err := doWrite(cctx, c, w, &next, sc)
			seen.add(w.Kind.String() + " " + writeEnding(err).String())
			if err != nil {
				delete(views, sc)
			} else {
				v.Record = next
				if w.Kind == core.WriteInsert || next.Token == v.FreshToken {
					v.FreshToken = 0 // used: the next reserve needs another
				}
			}
		} else {
			snap, err := c.Load(cctx, sc)
			if err != nil {
				seen.add("load failed")
				delete(views, sc)
			} else {
				seen.add("load ok")
				views[sc] = &snap
			}
		}
		cancel()
	}
}

// coreWrite is the write core.Step makes of a random event on the view's
// record, at the view's time or a little later (so that leases and TTLs
// run out); false when the event writes nothing.
func coreWrite(rng *rand.Rand, v *store.Snapshot, p *core.Policy) (core.Record, core.Write, bool) {
	pol := *p
	if rng.IntN(3) == 0 {
		pol.Fail = core.FailEvict
	}
	if rng.IntN(2) == 0 {
		pol.Expiry = core.ExpiryHard
	}
	ev := randomEvent(rng, v.Record.Token, v.FreshToken)
	ev.Now = v.Now.Add(time.Duration(rng.IntN(3000)) * time.Microsecond)
	next := v.Record
	res, err := core.Step(&next, &ev, &pol)
	if err != nil || res.Write.Kind == core.WriteNone {
		return core.Record{}, core.Write{}, false
	}
	return next, res.Write, true
}

// randomEvent draws an event for a scope whose current owner is owner,
// reserving with fresh when it is not zero.
func randomEvent(rng *rand.Rand, owner, fresh core.Token) core.Event {
	tok := owner
	switch r := rng.IntN(10); {
	case r == 0 && tok > 1:
		tok-- // a stale owner
	case r == 1:
		tok++ // a token that owns nothing
	}
	if tok == 0 {
		tok = 1
	}
	fp := fpA
	if rng.IntN(10) == 0 {
		fp = fpB
	}
	ev := core.Event{Token: tok}
	switch r := rng.IntN(100); {
	case r < 30 && fresh != 0, owner == 0 && fresh != 0:
		ev = core.Event{Kind: core.EventReserve, Fingerprint: fp, Token: fresh}
	case r < 45:
		ev.Kind, ev.Response = core.EventComplete, responses[rng.IntN(len(responses))]
	case r < 55:
		ev.Kind = core.EventFail
		if rng.IntN(2) == 0 {
			ev.ErrorCode = "declined_upstream"
		}
	case r < 65:
		ev.Kind = core.EventMarkUnknown
	case r < 78:
		ev.Kind = core.EventHeartbeat
	case r < 90:
		ev.Kind, ev.Verdict = core.EventResolve, core.Verdict(1+rng.IntN(3))
		if ev.Verdict == core.VerdictExecuted {
			ev.Response = responses[rng.IntN(len(responses))]
		}
	default:
		ev.Kind = core.EventSweep
	}
	return ev
}

// edgeWrite is a write meant to test a precondition: an insert over
// whatever is there, a compare-and-set on a stale version or a foreign
// token, a delete of what may be gone already.
func edgeWrite(rng *rand.Rand, v *store.Snapshot, p *core.Policy) (core.Record, core.Write, bool) {
	cur := v.Record
	switch rng.IntN(3) {
	case 0:
		if v.FreshToken == 0 {
			return core.Record{}, core.Write{}, false
		}
		next := core.Record{Scope: cur.Scope}
		ev := core.Event{Kind: core.EventReserve, Now: v.Now, Fingerprint: fpA, Token: v.FreshToken}
		if _, err := core.Step(&next, &ev, p); err != nil {
			panic(err) // an absent record always reserves
		}
		return next, core.Write{Kind: core.WriteInsert}, true
	case 1:
		next := cur
		if !next.Exists() {
			next = core.Record{Scope: cur.Scope, Status: core.StatusInProgress, Fingerprint: fpA, Token: max(v.FreshToken, 1), CreatedAt: v.Now, LockedUntil: v.Now.Add(p.LeaseDuration)}
		}
		w := core.Write{Kind: core.WriteUpdate, ExpectVersion: cur.Version, ExpectToken: cur.Token}
		switch rng.IntN(3) {
		case 0:
			w.ExpectVersion++
		case 1:
			w.ExpectVersion = max(w.ExpectVersion, 1) - 1
		default:
			w.ExpectToken++
		}
		next.Version = w.ExpectVersion + 1
		next.LastErrorCode = "edge_case"
		return next, w, true
	default:
		w := core.Write{Kind: core.WriteDelete, ExpectVersion: cur.Version, ExpectToken: cur.Token}
		if rng.IntN(2) == 0 && w.ExpectVersion > 1 {
			w.ExpectVersion--
		}
		return core.Record{Scope: cur.Scope}, w, true
	}
}

// doWrite performs w with next as the record to store.
func doWrite(ctx context.Context, c store.Store, w core.Write, next *core.Record, sc core.Scope) error {
	switch w.Kind {
	case core.WriteInsert:
		return c.Insert(ctx, next)
	case core.WriteUpdate:
		return c.CompareAndSet(ctx, next, w.ExpectVersion, w.ExpectToken)
	case core.WriteDelete:
		err := c.Delete(ctx, sc, w.ExpectVersion, w.ExpectToken)
		if err == nil {
			*next = core.Record{Scope: sc}
		}
		return err
	}
	return nil
}

// --- stress/lifecycle -------------------------------------------------------

// stressLifecycle has goroutines apply random events through store.Apply:
// reserves with one of two fingerprints, owner events with the latest token
// or an older one, resolves, sweeps, and pauses long enough for leases and
// TTLs to run out on the store's own clock.
func stressLifecycle(ctx context.Context, s store.Store, h *historySpec) (*historyOut, error) {
	rec := NewRecorder(s, nil)
	rng := h.rng(1 << 15)
	p := core.DefaultPolicy()
	p.LeaseDuration = time.Duration(1+rng.IntN(3)) * time.Millisecond
	p.TTL = 3 * time.Millisecond
	p.RetryAfter = time.Millisecond
	p.ReconcileBackoffBase, p.ReconcileBackoffCap, p.ReconcileAttemptsMax = time.Millisecond, 4*time.Millisecond, 3
	if rng.IntN(3) == 0 {
		p.Fail = core.FailEvict
	}
	if rng.IntN(2) == 0 {
		p.Expiry = core.ExpiryHard
	}
	if h.tune != nil {
		h.tune(&p)
	}
	tokens := newTokenBook()
	var decisions counter
	var problems []string
	var mu sync.Mutex
	goAll(h.cfg.goroutines, func(g int, round func()) {
		rng := h.rng(g)
		c := rec.Client(g)
		n := h.opsOf(g, h.cfg.operations)
		for i := range n {
			sc := h.scope(rng, i, n)
			owner := tokens.pick(rng, sc)
			ev := randomEvent(rng, owner, 1) // the store replaces the fresh token
			round()
			cctx, cancel := maybeDeadline(ctx, rng)
			a, err := applyOver(cctx, c, &p, sc, ev)
			cancel()
			switch {
			case err == nil:
				decisions.add(a.Result.Decision.Kind.String())
				if a.Result.Decision.Kind == core.DecisionExecute {
					tokens.add(sc, a.Result.Decision.Token)
				}
			case store.DriverBug(err):
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%v of %s: the store handed the core a bad record or token: %v", ev.Kind, sc, err))
				mu.Unlock()
			default:
				decisions.add("error")
			}
			if !h.quick && rng.IntN(40) == 0 {
				time.Sleep(time.Duration(rng.IntN(int(2 * p.LeaseDuration))))
			}
		}
	})
	out := &historyOut{store: rec.StoreHistory(), life: rec.LifecycleHistory(), policy: p, problems: problems}
	out.summaries = append(out.summaries, fmt.Sprintf("lifecycle decisions (lease %v, fail %v, expiry %v): %v", p.LeaseDuration, p.Fail, p.Expiry, &decisions),
		lifeOverlap(out.life), storeOverlap(out.store))
	return out, nil
}

// tokenBook remembers, per scope, the tokens told to execute.
type tokenBook struct {
	mu sync.Mutex
	m  map[core.Scope][]core.Token
}

func newTokenBook() *tokenBook { return &tokenBook{m: map[core.Scope][]core.Token{}} }

func (b *tokenBook) add(sc core.Scope, t core.Token) {
	b.mu.Lock()
	b.m[sc] = append(b.m[sc], t)
	b.mu.Unlock()
}

// pick is the latest token of sc most of the time, an older one otherwise,
// zero if none.
func (b *tokenBook) pick(rng *rand.Rand, sc core.Scope) core.Token {
	b.mu.Lock()
	defer b.mu.Unlock()
	ts := b.m[sc]
	switch {
	case len(ts) == 0:
		return 0
	case rng.IntN(10) < 7:
		return ts[len(ts)-1]
	}
	return ts[rng.IntN(len(ts))]
}

// --- stress/executor --------------------------------------------------------

// downstream is the system the actions charge: it fences by token, as a
// payment gateway keyed by the attempt's token would, and it remembers every
// side effect, so that at-most-once can be checked.
type downstream struct {
	mu       sync.Mutex
	executed map[core.Scope]execution
	fenced   map[core.Scope]core.Token // attempts up to this token were found not executed
	twice    []string
}

type execution struct {
	token core.Token
	resp  core.Response
}

// perform is the side effect of attempt token; false if it is fenced off.
func (d *downstream) perform(sc core.Scope, token core.Token, resp core.Response) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if token <= d.fenced[sc] {
		return false
	}
	if e, ok := d.executed[sc]; ok {
		d.twice = append(d.twice, fmt.Sprintf("%s: attempt t%d executed after attempt t%d had", sc, token, e.token))
		return true
	}
	d.executed[sc] = execution{token, resp}
	return true
}

// find tells the reconciler the truth about attempt token, fencing it off if
// it did not execute.
func (d *downstream) find(sc core.Scope, token core.Token) idem.Finding {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.executed[sc]; ok && e.token == token {
		return idem.Finding{Verdict: core.VerdictExecuted, Response: e.resp}
	}
	d.fenced[sc] = max(d.fenced[sc], token)
	return idem.Finding{Verdict: core.VerdictNotExecuted}
}

// stressExecutor has goroutines call Executor.Do on a few scopes with
// actions that succeed, refuse before sending (NotExecuted), fail after or
// before executing (unknown), panic, or outlive their lease (half of the
// executors do not heartbeat), beside a sweeper and a reconciler that asks
// the downstream. Besides linearizability it checks at most one side effect
// per scope and byte-identical replays.
func stressExecutor(ctx context.Context, s store.Store, h *historySpec) (*historyOut, error) {
	rec := NewRecorder(s, nil)
	rng := h.rng(1 << 15)
	p := core.DefaultPolicy()
	p.LeaseDuration = 3 * time.Millisecond
	p.TTL = time.Hour
	p.InFlightWait = time.Millisecond
	p.RetryAfter = time.Millisecond
	p.ReconcileBackoffBase, p.ReconcileBackoffCap, p.ReconcileAttemptsMax = time.Millisecond, 4*time.Millisecond, 4
	if rng.IntN(2) == 0 {
		p.Fail = core.FailEvict
	}
	down := &downstream{executed: map[core.Scope]execution{}, fenced: map[core.Scope]core.Token{}}
	var answers counter
	var mu sync.Mutex
	var problems []string
	problem := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	type replay struct {
		scope core.Scope
		resp  core.Response
	}
	var replays []replay

	stop := make(chan struct{})
	var bg sync.WaitGroup
	bgLoop := func(client int, kind store.DueKind, eventFor func(*core.Record, *rand.Rand) core.Event) {
		defer bg.Done()
		c := rec.Client(client)
		rng := h.rng(client)
		for {
			dueAndApply(ctx, c, &p, h, kind, rng, eventFor, problem)
			select {
			case <-stop:
				dueAndApply(ctx, c, &p, h, kind, rng, eventFor, problem)
				return
			case <-time.After(300 * time.Microsecond):
			}
		}
	}
	bg.Add(2)
	G := h.cfg.goroutines
	go bgLoop(G, store.DueSweep, func(*core.Record, *rand.Rand) core.Event {
		return core.Event{Kind: core.EventSweep}
	})
	go bgLoop(G+1, store.DueReconcile, func(r *core.Record, rng *rand.Rand) core.Event {
		f := idem.Finding{Verdict: core.VerdictStillUnknown}
		if rng.IntN(5) != 0 {
			f = down.find(r.Scope, r.Token)
		}
		return core.Event{Kind: core.EventResolve, Token: r.Token, Verdict: f.Verdict, Response: f.Response}
	})

	goAll(G, func(g int, round func()) {
		rng := h.rng(g)
		hb := p.LeaseDuration / 3
		if g%2 == 1 {
			hb = time.Hour // no heartbeat: long actions lose their lease
		}
		ex, err := idem.New(rec.Client(g), idem.WithPolicy(p), idem.WithHeartbeatInterval(hb))
		if err != nil {
			problem("idem.New: %v", err)
			return
		}
		n := h.opsOf(g, max(h.cfg.operations/2, 1))
		for i := range n {
			sc := h.scope(rng, i, n)
			fp := fpA
			if rng.IntN(10) == 0 {
				fp = fpB
			}
			action := func(ctx context.Context, a idem.Attempt) (idem.Response, error) {
				switch r := rng.IntN(100); {
				case r < 15:
					time.Sleep(time.Duration(rng.IntN(int(p.LeaseDuration / 2))))
				case r < 22:
					time.Sleep(p.LeaseDuration + time.Duration(rng.IntN(int(p.LeaseDuration))))
				}
				r := rng.IntN(100)
				if r < 8 {
					return idem.Response{}, idem.NotExecuted(errors.New("refused before sending"))
				}
				if r < 13 {
					return idem.Response{}, errors.New("timed out before sending") // unknown; did not execute
				}
				resp := responses[rng.IntN(len(responses))].Clone()
				resp.Body = fmt.Appendf(resp.Body, " t%d", a.Token)
				if !down.perform(a.Scope, a.Token, resp) {
					return idem.Response{}, idem.NotExecuted(errors.New("fenced off by the downstream"))
				}
				switch {
				case r < 85:
					return resp, nil
				case r < 96:
					return idem.Response{}, errors.New("timed out after executing")
				}
				panic("the action panicked after executing")
			}
			round()
			cctx, cancel := maybeDeadline(ctx, rng)
			res, err := ex.Do(cctx, idem.Request{Scope: sc, Fingerprint: fp}, action)
			cancel()
			var ie *idem.Error
			switch {
			case err == nil && res.Kind == idem.ResultReplayed:
				answers.add("replayed")
				mu.Lock()
				replays = append(replays, replay{sc, res.Response})
				mu.Unlock()
			case err == nil:
				answers.add(res.Kind.String())
			case store.DriverBug(err):
				problem("Do on %s: the store handed the core a bad record or token: %v", sc, err)
			case errors.Is(err, context.DeadlineExceeded):
				answers.add("deadline") // the caller gave up while waiting
			case errors.As(err, &ie):
				answers.add(string(ie.Code))
			default:
				problem("Do on %s: unexpected error %v", sc, err)
			}
		}
	})
	close(stop)
	bg.Wait()

	problems = append(problems, down.twice...)
	for _, r := range replays {
		e, ok := down.executed[r.scope]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: replayed %s although nothing executed", r.scope, r.resp.Describe()))
		} else if !e.resp.Equal(r.resp) {
			problems = append(problems, fmt.Sprintf("%s: replayed %s, executed %s", r.scope, r.resp.Describe(), e.resp.Describe()))
		}
	}
	out := &historyOut{store: rec.StoreHistory(), life: rec.LifecycleHistory(), policy: p, problems: problems}
	out.summaries = append(out.summaries, fmt.Sprintf("executor answers (fail %v): %v; %d scopes executed", p.Fail, &answers, len(down.executed)),
		lifeOverlap(out.life), storeOverlap(out.store))
	return out, nil
}

// dueAndApply is one pass of a sweeper or reconciler over the history's own
// scopes (the store may hold other records).
func dueAndApply(ctx context.Context, c store.Store, p *core.Policy, h *historySpec, kind store.DueKind, rng *rand.Rand,
	eventFor func(*core.Record, *rand.Rand) core.Event, problem func(string, ...any)) {
	recs, err := c.Due(ctx, kind, 100)
	if err != nil {
		problem("Due(%v): %v", kind, err)
		return
	}
	for i := range recs {
		r := &recs[i]
		if !h.visible[r.Scope] {
			continue
		}
		ev := eventFor(r, rng)
		if _, err := applyOver(ctx, c, p, r.Scope, ev); store.DriverBug(err) {
			problem("%v of %s: the store handed the core a bad record or token: %v", ev.Kind, r.Scope, err)
		}
	}
}
