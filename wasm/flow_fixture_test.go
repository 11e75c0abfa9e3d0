package wasmcore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/flow"
	"github.com/idemkit/idem/store"
	"github.com/idemkit/idem/wasm/internal/abi"
)

// The Node host's flow fixture (js/testdata/flows.json, read by
// flow.test.mjs): flows drawn as TestFlowDifferential draws them (without
// panics, which a JavaScript action does not have), each report with the
// native Flow's answer to it, encoded by package abi; the Node host must
// get the module to answer the same bytes.
const flowFixturePath = "js/testdata/flows.json"

// flowFixtureCases is how many flows the fixture holds.
const flowFixtureCases = 400

type (
	flowFixture struct {
		Comment string            `json:"comment"`
		Cases   []flowFixtureCase `json:"cases"`
	}
	flowFixtureCase struct {
		Config  flowFixtureConfig  `json:"config"`
		Request flowFixtureRequest `json:"request"`
		Begin   flowFixtureExpect  `json:"begin"`
		Reports []flowFixtureCall  `json:"reports"`
	}
	flowFixtureConfig struct {
		Policy            fixturePolicy `json:"policy"`
		OutcomeTimeout    string        `json:"outcomeTimeout"`
		HeartbeatInterval string        `json:"heartbeatInterval"`
	}
	flowFixtureRequest struct {
		Tenant      string `json:"tenant"`
		Principal   string `json:"principal"`
		UseCase     string `json:"useCase"`
		Key         string `json:"key"`
		Fingerprint string `json:"fingerprint"`
	}
	flowFixtureCall struct {
		Call     string              `json:"call"`
		Applied  *flowFixtureApplied `json:"applied,omitempty"`
		Error    *flowFixtureError   `json:"error,omitempty"`
		Response *fixtureResponse    `json:"response,omitempty"`
		Elapsed  string              `json:"elapsed,omitempty"`
		Sent     *string             `json:"sent,omitempty"`
		Now      *string             `json:"now,omitempty"`
		Expect   flowFixtureExpect   `json:"expect"`
	}
	flowFixtureApplied struct {
		Before     uint8             `json:"before"`
		Record     fixtureRecord     `json:"record"`
		Transition fixtureTransition `json:"transition"`
		Now        *string           `json:"now"`
	}
	// flowFixtureError is an error as a JavaScript host has it: its name
	// (AbortError, TimeoutError), the core's refusal it is (an IdemError's
	// code), the store's rejection, or an action's NotExecutedError.
	flowFixtureError struct {
		Name        string  `json:"name"`
		Sentinel    string  `json:"sentinel"`
		Rejected    bool    `json:"rejected"`
		NotExecuted *string `json:"notExecuted"` // its code
		Message     string  `json:"message"`
	}
	// flowFixtureExpect is the native answer: an effect's bytes (handle 0),
	// or a lease's answer.
	flowFixtureExpect struct {
		Answer   string             `json:"answer,omitempty"`
		Effect   *flowFixtureEffect `json:"effect,omitempty"`
		Next     string             `json:"next,omitempty"`
		Token    string             `json:"token,omitempty"`
		Interval string             `json:"interval,omitempty"`
		TellBy   *string            `json:"tellBy,omitempty"`
		Lost     *bool              `json:"lost,omitempty"`
		Cause    string             `json:"cause,omitempty"`
		Timeout  string             `json:"timeout,omitempty"`
	}
)

// flowFixtureEffect is the native Flow's effect as the Node host's Flow
// decodes it (its next): what a host reads to do the I/O.
type flowFixtureEffect struct {
	Kind        uint8                 `json:"kind"`
	Event       *fixtureEvent         `json:"event,omitempty"`
	Held        bool                  `json:"held,omitempty"`
	Detached    bool                  `json:"detached,omitempty"`
	Timeout     string                `json:"timeout,omitempty"`
	Token       string                `json:"token,omitempty"`
	LockedUntil *string               `json:"lockedUntil,omitempty"`
	Version     string                `json:"version,omitempty"`
	Wait        string                `json:"wait,omitempty"`
	Result      *flowFixtureResult    `json:"result,omitempty"`
	Error       *flowFixtureAnswerErr `json:"error,omitempty"`
}

type flowFixtureResult struct {
	Kind     uint8           `json:"kind"`
	Response fixtureResponse `json:"response"`
	Token    string          `json:"token"`
	Recorded bool            `json:"recorded"`
}

// flowFixtureAnswerErr is a flow's answer error: its code, status and
// retry after for an *flow.Error, its text always.
type flowFixtureAnswerErr struct {
	Code       string `json:"code,omitempty"`
	Status     int    `json:"status,omitempty"`
	RetryAfter string `json:"retryAfter,omitempty"`
	Message    string `json:"message"`
}

func fxEffect(nf *flow.Flow) *flowFixtureEffect {
	e := nf.Next()
	out := &flowFixtureEffect{Kind: uint8(e.Kind)}
	switch e.Kind {
	case flow.EffectApply:
		ev := fxEvent(e.Event)
		out.Event, out.Held, out.Detached, out.Timeout = &ev, e.Held != nil, e.Detached, fxI64(int64(e.Timeout))
	case flow.EffectRun:
		out.Token, out.LockedUntil = fxU64(uint64(e.Attempt.Token)), fxTime(e.Attempt.LockedUntil)
	case flow.EffectWait:
		out.Version, out.Token, out.Wait = fxU64(e.Version), fxU64(uint64(e.Token)), fxI64(int64(e.Wait))
	case flow.EffectAnswer:
		r, err := nf.Result()
		if err == nil {
			out.Result = &flowFixtureResult{Kind: uint8(r.Kind), Response: fxResponse(r.Response), Token: fxU64(uint64(r.Token)), Recorded: r.Recorded}
			break
		}
		out.Error = &flowFixtureAnswerErr{Message: err.Error()}
		var fe *flow.Error
		if errors.As(err, &fe) {
			out.Error.Code, out.Error.Status, out.Error.RetryAfter = string(fe.Code), fe.Status, fxI64(int64(fe.RetryAfter))
		}
	}
	return out
}

// flowRecorder records the reports drive gives it as the fixture's calls.
type flowRecorder struct{ calls []flowFixtureCall }

func (r *flowRecorder) Applied(a *store.Applied, err error) {
	c := flowFixtureCall{Call: "applied", Error: fxError(err)}
	if err == nil {
		c.Applied = fxApplied(a)
	}
	r.calls = append(r.calls, c)
}

func (r *flowRecorder) Ran(resp core.Response, err error) {
	c := flowFixtureCall{Call: "ran", Error: fxError(err)}
	if err == nil {
		fr := fxResponse(resp)
		c.Response = &fr
	}
	r.calls = append(r.calls, c)
}

func (r *flowRecorder) Waited(d time.Duration) {
	r.calls = append(r.calls, flowFixtureCall{Call: "waited", Elapsed: fxI64(int64(d))})
}

func (r *flowRecorder) Gone(err error) {
	r.calls = append(r.calls, flowFixtureCall{Call: "gone", Error: fxError(err)})
}

func fxApplied(a *store.Applied) *flowFixtureApplied {
	return &flowFixtureApplied{Before: uint8(a.Before), Record: fxRecord(a.Record), Transition: *fxTransition(a.Transition), Now: fxTime(a.Now)}
}

func fxError(err error) *flowFixtureError {
	if err == nil {
		return nil
	}
	e := &flowFixtureError{Message: err.Error(), Rejected: errors.Is(err, store.ErrRejected)}
	switch {
	case errors.Is(err, context.Canceled):
		e.Name = "AbortError"
	case errors.Is(err, context.DeadlineExceeded):
		e.Name = "TimeoutError"
	}
	if i := abi.SentinelOf(err); int(i) < len(sentinelNames) {
		e.Sentinel = sentinelNames[i]
	}
	var ne *flow.NotExecutedError
	if errors.As(err, &ne) {
		code := string(ne.Code)
		e.NotExecuted = &code
	}
	return e
}

// fxAnswer is the native Flow's effect encoded as the module answers it,
// for handle 0.
func fxAnswer(nf *flow.Flow) flowFixtureExpect {
	return flowFixtureExpect{Answer: hex.EncodeToString(abi.AppendEffect(nil, 0, nf)), Effect: fxEffect(nf)}
}

func fxLeaseState(next time.Duration, l *flow.Lease) flowFixtureExpect {
	return flowFixtureExpect{Next: fxI64(int64(next)), Token: fxU64(uint64(l.Event().Token)), Interval: fxI64(int64(l.Interval())), TellBy: fxTime(l.TellBy())}
}

// flowFixtureCaseGen draws one case, running the native Flow to know what
// each report is answered.
var flowFixtureCaseGen = rapid.Custom(func(t *rapid.T) flowFixtureCase {
	cfg := flow.Config{Policy: genPolicy(t)}
	if cfg.Policy.Validate() != nil && rapid.IntRange(0, 4).Draw(t, "keep_invalid_policy") != 0 {
		cfg.Policy = core.PolicyDefault()
	}
	if rapid.Bool().Draw(t, "durations_set") {
		cfg.OutcomeTimeout, cfg.HeartbeatInterval = genDuration(t, "outcome_timeout"), genDuration(t, "heartbeat_interval")
	}
	req := flow.Request{Scope: genFlowScope(t), Fingerprint: genRequestFP(t)}
	c := flowFixtureCase{
		Config: flowFixtureConfig{Policy: fxPolicy(cfg.Policy), OutcomeTimeout: fxI64(int64(cfg.OutcomeTimeout)), HeartbeatInterval: fxI64(int64(cfg.HeartbeatInterval))},
		Request: flowFixtureRequest{Tenant: req.Scope.Tenant, Principal: req.Scope.Principal, UseCase: req.Scope.UseCase, Key: req.Scope.Key,
			Fingerprint: hex.EncodeToString(req.Fingerprint[:])},
	}
	native := cfg
	nf, err := (*flow.Flow)(nil), native.Fill()
	if err == nil {
		nf, err = native.Begin(req)
	}
	if err != nil {
		c.Begin = flowFixtureExpect{Answer: hex.EncodeToString(abi.AppendFlowError(nil, err))}
		return c
	}
	c.Begin = fxAnswer(nf)
	rec := &flowRecorder{}
	lease := func() {
		c.Reports = append(c.Reports, rec.calls...)
		rec.calls = nil
		c.Reports = append(c.Reports, leaseCalls(t, nf)...)
	}
	report := func() {
		drive(t, nf, false, lease, rec)
		rec.calls[len(rec.calls)-1].Expect = fxAnswer(nf)
		c.Reports, rec.calls = append(c.Reports, rec.calls...), nil
	}
	for i := 0; i < 24 && !nf.Done(); i++ {
		report()
	}
	if nf.Done() && rapid.Bool().Draw(t, "report_after_done") {
		report() // answered out of step
	}
	return c
})

// leaseCalls starts the attempt's lease and draws calls of it, each with
// the native lease's answer.
func leaseCalls(t *rapid.T, nf *flow.Flow) []flowFixtureCall {
	sent := genHostTime(t, "lease_sent")
	l := nf.Lease(sent)
	calls := []flowFixtureCall{{Call: "lease", Sent: fxTime(sent), Expect: fxLeaseState(0, &l)}}
	for i := rapid.IntRange(0, 4).Draw(t, "lease_calls"); i > 0; i-- {
		now := genHostTime(t, "lease_now")
		switch rapid.IntRange(0, 2).Draw(t, "lease_call") {
		case 0:
			a, err := genBeat(t)
			c := flowFixtureCall{Call: "beaten", Sent: fxTime(sent), Now: fxTime(now), Error: fxError(err)}
			if err == nil {
				c.Applied = fxApplied(&a)
			}
			c.Expect = fxLeaseState(l.Beaten(sent, now, &a, err), &l)
			calls = append(calls, c)
		case 1:
			cause, lost := l.Lost(now)
			e := flowFixtureExpect{Lost: &lost}
			if lost {
				e.Cause = cause.Error()
			}
			calls = append(calls, flowFixtureCall{Call: "lost", Now: fxTime(now), Expect: e})
		case 2:
			calls = append(calls, flowFixtureCall{Call: "beatTimeout", Now: fxTime(now), Expect: flowFixtureExpect{Timeout: fxI64(int64(l.BeatTimeout(now)))}})
		}
	}
	return calls
}

// TestNodeFlowFixtureFresh keeps js/testdata/flows.json the cases drawn
// from seeds 0.. (rewrite it with -update-fixture).
func TestNodeFlowFixtureFresh(t *testing.T) {
	fx := flowFixture{Comment: fmt.Sprintf("generated by go test ./wasm/ -run TestNodeFlowFixtureFresh -update-fixture from the native Flow (%d cases); read by flow.test.mjs", flowFixtureCases)}
	for i := 0; i < flowFixtureCases; i++ {
		fx.Cases = append(fx.Cases, flowFixtureCaseGen.Example(i))
	}
	keepJSONFixture(t, flowFixturePath, "TestNodeFlowFixtureFresh", fx)
}
