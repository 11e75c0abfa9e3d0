package sim

import (
	"strings"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/core"
)

// FaultBadInput makes the world send what idem must refuse (SPEC §3, §5):
// a key with a space at either end or made of spaces, and a server
// configuration with a policy value out of range; FaultCheckBad has the
// reconciler's look at the ledger return a response with a header value
// that carries CR and LF (response splitting on replay).
// The checker judges each by rules of its own, written from the SPEC, not
// by the core's validation, which is under test: bad input gets an error
// and writes nothing; good input is taken.

// badKey turns a valid key into one the glossary says is not a key (SPEC
// §3): a space at its start or end, spaces only, 15 bytes (one short), 256
// (one too many), a control character, a non-ASCII letter.
func badKey(key string, how int) string {
	switch how {
	case 0:
		return " " + key
	case 1:
		return key + " "
	case 2:
		return strings.Repeat(" ", len(key))
	case 3:
		return key[:15]
	case 4:
		return strings.Repeat(key, 8)[:256]
	case 5:
		return key[:10] + "\t" + key[11:]
	}
	return key[:10] + "\u00e9" + key[12:]
}

// badKeyKinds is how many ways badKey has.
const badKeyKinds = 7

// keyRefusable is the checker's rule for the keys the world makes (SPEC
// §3): empty, shorter than 16 or longer than 255 bytes, a byte that is not
// printable ASCII, a space at either end.
func keyRefusable(key string) bool {
	if len(key) < 16 || len(key) > 255 || key[0] == ' ' || key[len(key)-1] == ' ' {
		return true
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return true
		}
	}
	return false
}

// codeTakeable is the checker's rule for an error code a record may keep
// (SPEC §5: what every store can keep byte for byte): 1 to 64 bytes of
// RFC 9110 token characters.
func codeTakeable(code string) bool {
	if code == "" || len(code) > 64 {
		return false
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// Error codes an action gives with "not executed": none (the core's
// default), a plain one and one of exactly 64 bytes, all kept; under
// FaultBadInput also one a byte too long, a message with spaces, one with
// a non-ASCII letter and one with CR LF, which the executor must not hand
// the core (it keeps the default, and says so).
var (
	goodCodes = []string{"", "gateway_refused", strings.Repeat("x", 63) + "!"}
	badCodes  = []string{strings.Repeat("y", 65), "card declined", "refus\xc3\xa9", "bad\r\ncode"}
)

// notExecutedCode draws an action's error code for "not executed".
func (w *world) notExecutedCode() string {
	if w.fault(FaultBadInput, w.rng.servers) {
		return badCodes[w.rng.servers.IntN(len(badCodes))]
	}
	return goodCodes[w.rng.servers.IntN(len(goodCodes))]
}

// headerRefusable is the checker's rule for a stored response: a header
// value with CR, LF or NUL splits the response it is replayed in.
func headerRefusable(r *core.Response) bool {
	for _, h := range r.Headers {
		if strings.ContainsAny(h.Value, "\r\n\x00") {
			return true
		}
	}
	return false
}

// splittingHeader is a header a bad Check returns (FaultCheckBad): a
// downstream message echoed with a line break in it.
var splittingHeader = core.Header{Name: "X-Gateway-Message", Value: "ok\r\nSet-Cookie: session=attacker"}

// policyLimits is SPEC §5's range for the policy values the world draws
// out of range: TTL and tombstone retention in (0, 72 h], a positive lease,
// a non-negative in-flight wait, at least one reconcile attempt.
const policyDurationMax = 72 * time.Hour

func policyRefusable(p *core.Policy) bool {
	return p.TTL <= 0 || p.TTL > policyDurationMax ||
		p.TombstoneRetention <= 0 || p.TombstoneRetention > policyDurationMax ||
		p.LeaseDuration <= 0 || p.InFlightWait < 0 || p.ReconcileAttemptsMax == 0
}

// misconfigure is the policy of a server's configuration under
// FaultBadInput: the seed's, with one value drawn at or around the edges
// of its range (in range or not: the checker's rule says which).
func (w *world) misconfigure() core.Policy {
	p := w.policy
	r := w.rng.servers
	edges := []time.Duration{-time.Second, 0, 1, policyDurationMax - 1, policyDurationMax, policyDurationMax + 1, 2 * policyDurationMax, 30 * 24 * time.Hour}
	d := edges[r.IntN(len(edges))]
	switch r.IntN(5) {
	case 0:
		p.TTL = d
	case 1:
		p.TombstoneRetention = d
	case 2:
		p.LeaseDuration = []time.Duration{-time.Second, 0, time.Millisecond}[r.IntN(3)]
	case 3:
		p.InFlightWait = min(d, 0)
	default:
		p.ReconcileAttemptsMax = uint32(r.IntN(2))
	}
	return p
}

// reconfigure is a server reading its configuration as it (re)starts:
// under FaultBadInput the configuration is off, and building an executor
// from it must fail when the policy is out of range (the server then
// keeps its last good one).
func (w *world) reconfigure() {
	if !w.fault(FaultBadInput, w.rng.servers) {
		return
	}
	p := w.misconfigure()
	_, err := idem.New(w.store.view(&opMeta{scope: -1}), idem.WithPolicy(p))
	w.check.policy(&p, err)
}

// policy hears the outcome of building an executor from p (invariant 9).
func (c *checker) policy(p *core.Policy, err error) {
	switch refusable := policyRefusable(p); {
	case refusable && err == nil:
		c.fail(invBadInput, -1, "a policy out of range was taken: ttl %v, tombstone retention %v, lease %v, in-flight wait %v, reconcile attempts max %d",
			p.TTL, p.TombstoneRetention, p.LeaseDuration, p.InFlightWait, p.ReconcileAttemptsMax)
	case !refusable && err != nil:
		c.fail(invBadInput, -1, "a policy in range was refused: %v", err)
	}
}

// begun hears a server begin req with key as its client wrote it
// (invariant 9): a bad key is refused with an error, a good one taken.
func (c *checker) begun(req *request, key string, err error) {
	switch refusable := keyRefusable(key); {
	case refusable && err == nil:
		c.fail(invBadInput, req.scope, "the key %q (payload %d) was taken", key, req.payload)
	case !refusable && err != nil:
		c.fail(invBadInput, req.scope, "payload %d was refused: %v", req.payload, err)
	}
}

// written holds a write to the rules: nothing is written for a bad key,
// no response is stored with a header that splits it, and no error code
// but a token (invariant 9).
func (c *checker) written(scope int32, rec *core.Record) {
	switch {
	case keyRefusable(rec.Scope.Key):
		c.fail(invBadInput, scope, "a record was written for the key %q", rec.Scope.Key)
	case headerRefusable(&rec.Response):
		c.fail(invBadInput, scope, "a response was stored with a header value that splits it: %s", rec.Response.Describe())
	case rec.LastErrorCode != "" && !codeTakeable(string(rec.LastErrorCode)):
		c.fail(invBadInput, scope, "a record was written with the error code %q", rec.LastErrorCode)
	}
}
