package sim

import (
	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/refmodel"
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
func copyResponse(r core.Response) core.Response { return copyResponseIn(nil, r) }

// copyResponseIn is copyResponse in the world's slabs (nil: the heap): the
// copies a world makes live as long as it does.
func copyResponseIn(s *slabs, r core.Response) core.Response {
	if r.Headers != nil {
		h := s.headerSlice(len(r.Headers))
		copy(h, r.Headers)
		r.Headers = h
	}
	if r.Body != nil {
		r.Body = s.bytesOf(r.Body)
	}
	return r
}

// sameResponse reports whether a and b are byte for byte the same answer:
// the reference model's comparison (refmodel.SameResponse), which is also
// how the lifecycle checker holds a stored response to the table's, so
// that a broken core.Response.Equal cannot pass for a correct one.
func sameResponse(a, b core.Response) bool { return refmodel.SameResponse(a, b) }

// reuseBuffer overwrites r's slices in place, as the next request served
// from the same pooled buffer would.
func reuseBuffer(r *core.Response) {
	// Filled by doubling copies, not a byte at a time: a large answer is
	// 64 KB, and every reply fills its buffer.
	if b := r.Body; len(b) > 0 {
		b[0] = '#'
		for n := 1; n < len(b); n *= 2 {
			copy(b[n:], b[:n])
		}
	}
	for i := range r.Headers {
		r.Headers[i] = core.Header{Name: "X-Pooled", Value: "reused"}
	}
}
