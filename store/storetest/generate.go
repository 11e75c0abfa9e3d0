package storetest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/store"
)

// fpA and fpB are the fingerprints of the two requests the histories send
// under one key: mostly A, sometimes B (a key reused for another request).
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

// historySpec is what one history is told.
type historySpec struct {
	cfg     *config
	seed    uint64
	index   int
	windows int
	quick   bool               // no pauses for leases to run out (benchmark histories)
	tune    func(*core.Policy) // changes the drawn policy (this package's tests)
	scopes  []core.Scope
	visible map[core.Scope]bool
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

// applyOver is store.Apply with an Applied of its own, for the tests and
// stress runs that keep each outcome.
func applyOver(ctx context.Context, s store.Store, p *core.Policy, scope core.Scope, ev core.Event) (store.Applied, error) {
	var a store.Applied
	err := store.Apply(ctx, s, scope, ev, p, &a)
	return a, err
}
