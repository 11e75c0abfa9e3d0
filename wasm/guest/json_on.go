//go:build wasip1 && abijson

package main

import (
	"encoding/json"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/wasm/internal/abi"
)

// The JSON encoding, built only with -tags abijson, for the measurement
// that chose the binary layout (BENCHMARKS.md, "wasm"): the same exports,
// with the request and the answer as encoding/json documents of the core's
// own types. It is not an ABI: times lose their locations, and nothing
// checks it beyond the benchmark.

type jsonRequest struct {
	Record core.Record
	Event  core.Event
	Policy core.Policy
}

type jsonAnswer struct {
	Transition core.Transition
	Record     core.Record
	Code       uint8
	Error      string
}

func init() { stepImpl = stepJSON }

func stepJSON(dst []byte, size uint32) []byte {
	var req jsonRequest
	var ans jsonAnswer
	if err := json.Unmarshal(input[:size], &req); err != nil {
		ans.Code, ans.Error = abi.SentinelMalformedRequest, err.Error()
	} else if res, err := core.Step(&req.Record, &req.Event, &req.Policy); err != nil {
		ans.Code, ans.Error = abi.SentinelOf(err), err.Error()
	} else {
		ans.Transition, ans.Record = res, req.Record
	}
	b, _ := json.Marshal(&ans)
	return append(dst, b...)
}
