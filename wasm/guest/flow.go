//go:build wasip1

package main

import (
	"unsafe"

	"github.com/idemkit/idem/flow"
	"github.com/idemkit/idem/wasm/internal/abi"
)

// flows are the flows a host began and has not ended, by handle (an index
// here); a flow's lease is kept beside it. Ended slots are reused, so
// that a long-running host keeps as many as it runs at once.
var (
	flows []*flowSlot
	free  []uint32
)

type flowSlot struct {
	cfg   flow.Config // its own copy: a Flow reads it until it ends
	f     flow.Flow
	lease flow.Lease
	live  bool
}

// idemFlow runs the flow call in the first size bytes of the input buffer
// and returns (address << 32) | length of the answer, as idem_step does.
//
//go:wasmexport idem_flow
func idemFlow(size uint32) uint64 {
	answer = flowCall(answer[:0], size)
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(answer))))<<32 | uint64(len(answer))
}

func flowCall(dst []byte, size uint32) []byte {
	if uint64(size) > uint64(len(input)) {
		return abi.AppendRefused(dst, abi.ErrMalformedRequest)
	}
	// A copy: what the call carries (a scope, a record, a response) is
	// kept by its flow past the call, and the input buffer is reused.
	var c abi.FlowCall
	if err := abi.DecodeFlowCall(append([]byte(nil), input[:size]...), &c); err != nil {
		return abi.AppendRefused(dst, err)
	}
	if c.Call == abi.FlowBegin {
		return begin(dst, &c)
	}
	if int(c.Handle) >= len(flows) || !flows[c.Handle].live {
		return abi.AppendRefused(dst, abi.ErrMalformedRequest) // a flow never begun, or ended: a host bug
	}
	s := flows[c.Handle]
	switch c.Call {
	case abi.FlowApplied:
		s.f.Applied(&c.Applied, c.Err)
	case abi.FlowRan:
		s.f.Ran(c.Response, c.Err)
	case abi.FlowWaited:
		s.f.Waited(c.Elapsed)
	case abi.FlowGone:
		s.f.Gone(c.Err)
	case abi.FlowLease:
		s.lease = s.f.Lease(c.Sent)
		return abi.AppendLeaseState(dst, 0, &s.lease)
	case abi.FlowBeaten:
		next := s.lease.Beaten(c.Sent, c.Now, &c.Applied, c.Err)
		return abi.AppendLeaseState(dst, next, &s.lease)
	case abi.FlowLost:
		cause, lost := s.lease.Lost(c.Now)
		return abi.AppendLostAnswer(dst, cause, lost)
	case abi.FlowBeatTimeout:
		return abi.AppendDuration(dst, s.lease.BeatTimeout(c.Now))
	case abi.FlowEnd:
		*s = flowSlot{}
		free = append(free, c.Handle)
		return append(dst, abi.AnswerOK)
	}
	return abi.AppendEffect(dst, c.Handle, &s.f)
}

func begin(dst []byte, c *abi.FlowCall) []byte {
	if err := c.Config.Fill(); err != nil {
		return abi.AppendFlowError(dst, err)
	}
	var h uint32
	if n := len(free); n > 0 {
		h, free = free[n-1], free[:n-1]
	} else {
		flows = append(flows, new(flowSlot))
		h = uint32(len(flows) - 1)
	}
	s := flows[h]
	s.cfg, s.live = c.Config, true
	if err := s.cfg.BeginIn(&s.f, c.Request); err != nil {
		*s = flowSlot{}
		free = append(free, h)
		return abi.AppendFlowError(dst, err)
	}
	return abi.AppendEffect(dst, h, &s.f)
}
