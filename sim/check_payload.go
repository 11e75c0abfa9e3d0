package sim

import "github.com/idemkit/idem/core"

// The checkers of the fingerprint (SPEC §3): the same request always gets
// the same fingerprint, and two different requests never share one. "The
// same request" is the world's judgement, from the reference pre-image of
// the payload's value (payloadSpace.refPreimage), never from package
// fingerprint or the core.

// payloadChecks is the checker's state for the fingerprint rules.
type payloadChecks struct {
	// owner maps each fingerprint a server computed to the reference
	// fingerprint of the request it was computed for: a fingerprint with
	// two owners is two different requests that would replay each
	// other's outcomes.
	owner map[core.Fingerprint]core.Fingerprint
	// others: the scope has seen requests of more than one payload (a
	// buggy client's reuse), so a Mismatch there is the right answer.
	others []bool
	first  []core.Fingerprint // the reference fingerprint of the scope's first request
}

func (p *payloadChecks) init(requests int) {
	p.owner = cleared(p.owner, requests)
	p.others = sized(p.others, requests)
	p.first = sized(p.first, requests)
}

// request hears the world make a request.
func (c *checker) request(req *request) {
	p := &c.payload
	switch {
	case p.first[req.scope].IsZero():
		p.first[req.scope] = req.fp
	case p.first[req.scope] != req.fp:
		p.others[req.scope] = true
	}
}

// fingerprint hears a server compute fp for a send of req (invariant 3:
// domain separation).
func (c *checker) fingerprint(req *request, fp core.Fingerprint) {
	owner, ok := c.payload.owner[fp]
	if !ok {
		c.payload.owner[fp] = req.fp
		return
	}
	if owner != req.fp {
		c.fail(3, req.scope, "payload %d (use case %s, schema version %d) has fingerprint %v, which another request, a different one, had too",
			req.payload, useCases[req.useCase], schemaVersions[req.version], fp.Short())
	}
}

// fingerprintRefused hears a server refuse a body the world wrote: every
// body a client sends is strict I-JSON.
func (c *checker) fingerprintRefused(att *attempt, err error) {
	c.fail(6, att.req.scope, "the body of payload %d was refused: %v\n%s", att.req.payload, err, att.body)
}

// mismatch hears req answered 422 (invariant 6): right only if its key
// carried another payload before.
func (c *checker) mismatch(req *request) {
	if !c.payload.others[req.scope] {
		c.fail(6, req.scope, "payload %d was answered 422 (key misuse), but its key only ever carried this payload", req.payload)
	}
}
