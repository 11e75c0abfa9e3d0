package sim

import (
	"bytes"
	"slices"

	"github.com/idemkit/idem/core"
)

// Responses cross the simulated network and sit in pooled buffers as they
// would in a real server: the client gets its own copy of the bytes, and a
// server reuses the buffer it handed to Complete once its answer is sent.
// A store (or core) that kept the caller's slices instead of a copy then
// replays whatever the buffer holds next, which the replay-fidelity checker
// sees. The checkers compare responses with sameResponse, not with the
// core's Response.Equal, which is under test.

// copyResponse is r with slices of its own (what a network or a pool copy
// does), without the core's Clone.
func copyResponse(r core.Response) core.Response {
	if r.Headers != nil {
		r.Headers = slices.Clone(r.Headers)
	}
	if r.Body != nil {
		r.Body = append(make([]byte, 0, len(r.Body)), r.Body...)
	}
	return r
}

// sameResponse reports whether a and b are byte for byte the same answer:
// status, schema version, every header (name and value, in order) and the
// body. It is the checker's own comparison, so that a broken
// core.Response.Equal cannot pass for a correct one.
func sameResponse(a, b core.Response) bool {
	return a.StatusCode == b.StatusCode && a.SchemaVersion == b.SchemaVersion &&
		slices.Equal(a.Headers, b.Headers) && bytes.Equal(a.Body, b.Body)
}

// reuseBuffer overwrites r's slices in place, as the next request served
// from the same pooled buffer would.
func reuseBuffer(r *core.Response) {
	for i := range r.Body {
		r.Body[i] = '#'
	}
	for i := range r.Headers {
		r.Headers[i] = core.Header{Name: "X-Pooled", Value: "reused"}
	}
}
