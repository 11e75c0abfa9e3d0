package wasmcore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/flow"
	"github.com/idemkit/idem/store"
	"github.com/idemkit/idem/wasm/internal/abi"
)

// TestFlowDifferential drives a native flow.Flow and the module's Flow
// with the same reports, drawn by rapid (every effect, well-formed or out
// of step; store errors of each class; actions that answer, fail without
// executing, panic or end with the caller's context; leases beaten and
// lost; 64-bit values of every magnitude), and holds the module to the
// native Flow after every report: its answer's bytes are the native
// Flow's effect encoded by package abi, and what its calls return is the
// same.
func TestFlowDifferential(t *testing.T) {
	h := testHost(t)
	rawAnswers = true
	defer func() { rawAnswers = false }()
	rapid.Check(t, func(t *rapid.T) {
		cfg := flow.Config{Policy: genPolicy(t)}
		if cfg.Policy.Validate() != nil && rapid.IntRange(0, 4).Draw(t, "keep_invalid_policy") != 0 {
			cfg.Policy = core.PolicyDefault() // most flows get past their beginning
		}
		if rapid.Bool().Draw(t, "durations_set") {
			cfg.OutcomeTimeout, cfg.HeartbeatInterval = genDuration(t, "outcome_timeout"), genDuration(t, "heartbeat_interval")
		}
		req := flow.Request{Scope: genFlowScope(t), Fingerprint: genRequestFP(t)}
		native := cfg
		nf, nerr := (*flow.Flow)(nil), native.Fill()
		if nerr == nil {
			nf, nerr = native.Begin(req)
		}
		wf, werr := h.BeginFlow(cfg, req)
		if d := compareFlowErrors(nerr, werr); d != "" {
			t.Fatalf("begin: %s", d)
		}
		if nerr != nil {
			return
		}
		defer wf.Close()
		for i := 0; ; i++ {
			if d := compareFlows(nf, wf); d != "" {
				t.Fatalf("after report %d: %s", i, d)
			}
			if nf.Done() && !rapid.Bool().Draw(t, "report_after_done") || i == 24 {
				return
			}
			drive(t, nf, true, func() { driveLease(t, nf, wf) }, wf)
		}
	})
}

// genRequestFP is a request's fingerprint: now and then none, which the
// Flow refuses.
func genRequestFP(t *rapid.T) core.Fingerprint {
	if rapid.IntRange(0, 7).Draw(t, "fingerprint_missing") == 0 {
		return core.Fingerprint{}
	}
	return rapid.SampledFrom(genFPs[1:]).Draw(t, "fingerprint")
}

// genFlowScope is genScope, or a scope the Flow refuses.
func genFlowScope(t *rapid.T) core.Scope {
	s := genScope
	switch rapid.IntRange(0, 19).Draw(t, "scope_kind") {
	case 0:
		s.Key = "short"
	case 1:
		s.Tenant = ""
	case 2:
		s.Key = strings.Repeat("k", 300)
	case 3:
		s.Principal = "é-ü"
	}
	return s
}

// reportee is a Flow that takes the reports drive draws: the module's, or
// a fixture's recorder (flow_fixture_test.go).
type reportee interface {
	Applied(a *store.Applied, err error)
	Ran(resp core.Response, err error)
	Waited(elapsed time.Duration)
	Gone(err error)
}

// drive draws a report for the native Flow's effect (or one out of step)
// and gives it to nf and to each of others; panics only if panics is set
// (the Node host has none to report). A Run's lease is driven by lease, if
// not nil, before the action's return.
func drive(t *rapid.T, nf *flow.Flow, panics bool, lease func(), others ...reportee) {
	eff := nf.Next()
	kind := eff.Kind
	if rapid.IntRange(0, 15).Draw(t, "out_of_step") == 0 {
		kind = flow.EffectKind(rapid.IntRange(1, 4).Draw(t, "report_as"))
	}
	all := append([]reportee{nf}, others...)
	switch kind {
	case flow.EffectApply, flow.EffectAnswer:
		switch rapid.IntRange(0, 9).Draw(t, "apply_outcome") {
		case 0:
			err := genCallerErr(t)
			for _, f := range all {
				f.Gone(err)
			}
		case 1, 2:
			err := genStoreErr(t)
			for _, f := range all {
				f.Applied(nil, err)
			}
		default:
			a := genApplied(t, eff.Event.Kind)
			for _, f := range all {
				f.Applied(&a, nil)
			}
		}
	case flow.EffectRun:
		if eff.Kind == flow.EffectRun && lease != nil && rapid.Bool().Draw(t, "lease") {
			lease()
		}
		resp, err := genRan(t, panics)
		for _, f := range all {
			f.Ran(resp, err)
		}
	case flow.EffectWait:
		if rapid.IntRange(0, 4).Draw(t, "wait_gone") == 0 {
			err := genCallerErr(t)
			for _, f := range all {
				f.Gone(err)
			}
			return
		}
		d := time.Duration(int64(genU64(t, "elapsed", math.MaxUint64)))
		for _, f := range all {
			f.Waited(d)
		}
	}
}

// driveLease starts the attempt's lease in both and compares every call.
func driveLease(t *rapid.T, nf *flow.Flow, wf *Flow) {
	sent := genHostTime(t, "lease_sent")
	nl, wl := nf.Lease(sent), wf.Lease(sent)
	same := func(what string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("lease %s: native %v, module %v", what, a, b)
		}
	}
	sameLease := func() {
		same("event", nl.Event(), wl.Event())
		same("interval", nl.Interval(), wl.Interval())
		if !nl.TellBy().Equal(wl.TellBy()) {
			t.Fatalf("lease TellBy: native %v, module %v", nl.TellBy(), wl.TellBy())
		}
	}
	sameLease()
	for i := rapid.IntRange(0, 4).Draw(t, "lease_calls"); i > 0; i-- {
		now := genHostTime(t, "lease_now")
		switch rapid.IntRange(0, 2).Draw(t, "lease_call") {
		case 0:
			a, err := genBeat(t)
			same("Beaten", nl.Beaten(sent, now, &a, err), wl.Beaten(sent, now, &a, err))
			sameLease()
		case 1:
			nc, nlost := nl.Lost(now)
			wc, wlost := wl.Lost(now)
			same("Lost", nlost, wlost)
			if d := compareFlowErrors(nc, wc); d != "" {
				t.Fatalf("lease Lost's cause: %s", d)
			}
		case 2:
			same("BeatTimeout", nl.BeatTimeout(now), wl.BeatTimeout(now))
		}
	}
}

// genBeat is what a heartbeat's store call answers: what it applied, or
// a store error.
func genBeat(t *rapid.T) (store.Applied, error) {
	if rapid.Bool().Draw(t, "beat_failed") {
		return store.Applied{}, genStoreErr(t)
	}
	return genApplied(t, core.EventHeartbeat), nil
}

// genHostTime is a time on a host's clock around genT0, to the nanosecond.
func genHostTime(t *rapid.T, name string) time.Time {
	return genT0.Add(time.Duration(rapid.Int64Range(-int64(time.Hour), int64(time.Hour)).Draw(t, name)))
}

// genCallerErr is what a caller's context ended with, or an error of
// another kind, bare or wrapped.
func genCallerErr(t *rapid.T) error {
	err := rapid.SampledFrom([]error{context.Canceled, context.DeadlineExceeded, errors.New("client went away")}).Draw(t, "caller_err")
	if rapid.Bool().Draw(t, "caller_err_wrapped") {
		err = fmt.Errorf("request aborted: %w", err)
	}
	return err
}

// genStoreErr is a store failure of each class the Flow tells apart: an
// outage (or an ambiguous write), the store's rejection, and the core's
// refusal handed on (a caller's bad input, or a driver's bug).
func genStoreErr(t *rapid.T) error {
	causes := []error{errors.New("connection reset"), context.DeadlineExceeded, store.ErrRejected,
		fmt.Errorf("%w: value too long", store.ErrRejected)}
	for _, s := range abi.Sentinels {
		causes = append(causes, fmt.Errorf("%w: drawn", s))
	}
	cause := rapid.SampledFrom(causes).Draw(t, "store_cause")
	return &store.Error{Method: store.Method(rapid.IntRange(0, 8).Draw(t, "store_method")), Err: cause}
}

// genApplied is what a store may answer to an event of kind ev: any
// status before, a record of any content, a decision the core gives that
// event most often and any other sometimes (even none it has), any time.
func genApplied(t *rapid.T, ev core.EventKind) store.Applied {
	o := genOptions{bodyBytesMax: 64}
	a := store.Applied{Before: core.Status(rapid.IntRange(0, 7).Draw(t, "before"))}
	a.Record = genStart(t, o, genTokenBase(t))
	a.Record.Token = core.Token(genU64(t, "record_token", math.MaxUint64))
	a.Record.Status = core.Status(rapid.IntRange(0, 7).Draw(t, "record_status"))
	if rapid.Bool().Draw(t, "locked") {
		a.Record.LockedUntil = genHostTime(t, "locked_until")
	}
	tr := &a.Transition
	tr.Decision.Kind = core.DecisionKind(rapid.IntRange(0, 23).Draw(t, "decision"))
	if rapid.IntRange(0, 3).Draw(t, "decision_plausible") != 0 { // the answers the event gets from a core
		kinds := []core.DecisionKind{core.DecisionCompleted, core.DecisionAcknowledged, core.DecisionFailed,
			core.DecisionMarkedUnknown, core.DecisionStale, core.DecisionConflict}
		switch ev {
		case core.EventReserve:
			kinds = []core.DecisionKind{core.DecisionExecute, core.DecisionExecute, core.DecisionExecute, core.DecisionReplay,
				core.DecisionMismatch, core.DecisionInFlight, core.DecisionInFlight, core.DecisionReconciling}
		case core.EventHeartbeat:
			kinds = []core.DecisionKind{core.DecisionExtended, core.DecisionExtended, core.DecisionStale, core.DecisionConflict}
		}
		tr.Decision.Kind = rapid.SampledFrom(kinds).Draw(t, "decision_kind")
	}
	tr.Decision.Token = core.Token(genU64(t, "decision_token", math.MaxUint64))
	tr.Decision.RetryAfter = time.Duration(int64(genU64(t, "retry_after", math.MaxUint64)))
	tr.Write.Kind = core.WriteKind(rapid.IntRange(0, 5).Draw(t, "write"))
	tr.Write.ExpectVersion = genU64(t, "expect_version", math.MaxUint64)
	tr.Write.ExpectToken = core.Token(genU64(t, "expect_token", math.MaxUint64))
	if rapid.IntRange(0, 9).Draw(t, "now_zero") != 0 {
		a.Now = genHostTime(t, "now")
	}
	return a
}

// genRan is what an action returns: a response, proof it did nothing
// (with a valid code or not, wrapped or not), a panic, or another error.
func genRan(t *rapid.T, panics bool) (core.Response, error) {
	n := rapid.IntRange(0, 5).Draw(t, "ran")
	if n == 3 && !panics {
		n = 4
	}
	switch n {
	case 0, 1:
		return genResponse(t, genOptions{bodyBytesMax: 64}, "ran_"), nil
	case 2:
		code := rapid.SampledFrom([]core.ErrorCode{"", "card_declined", "bad code!", core.ErrorCode(strings.Repeat("x", 200))}).Draw(t, "not_executed_code")
		var err error = &flow.NotExecutedError{Err: errors.New("gateway said no"), Code: code}
		if rapid.Bool().Draw(t, "not_executed_wrapped") {
			err = fmt.Errorf("charge: %w", err)
		}
		return core.Response{}, err
	case 3:
		var err error = &flow.PanicError{Value: rapid.SampledFrom([]any{"boom", 42, errors.New("nil map")}).Draw(t, "panic_value")}
		if rapid.Bool().Draw(t, "panic_wrapped") {
			err = fmt.Errorf("recovered: %w", err)
		}
		return core.Response{}, err
	}
	return core.Response{}, genCallerErr(t)
}

// compareFlows compares the module's last answer with the native Flow's
// effect, byte for byte, and what the two flows' calls return.
func compareFlows(nf *flow.Flow, wf *Flow) string {
	if want := abi.AppendEffect(nil, wf.handle, nf); !bytes.Equal(wf.raw, want) {
		return fmt.Sprintf("answer bytes differ:\nnative %x\nmodule %x", want, wf.raw)
	}
	ne, we := nf.Next(), wf.Next()
	if ne.Kind != we.Kind || nf.Done() != wf.Done() {
		return fmt.Sprintf("effect %v (done %v), module %v (done %v)", ne.Kind, nf.Done(), we.Kind, wf.Done())
	}
	switch ne.Kind {
	case flow.EffectApply:
		if !reflect.DeepEqual(ne.Event, we.Event) || ne.Detached != we.Detached || ne.Timeout != we.Timeout {
			return fmt.Sprintf("apply %+v, module %+v", *ne, *we)
		}
		if (ne.Held == nil) != (we.Held == nil) || ne.Held != nil && !reflect.DeepEqual(*ne.Held, *we.Held) {
			return fmt.Sprintf("held %+v, module %+v", ne.Held, we.Held)
		}
	case flow.EffectRun:
		na, wa := ne.Attempt, we.Attempt
		if na.Scope != wa.Scope || na.Token != wa.Token || !na.LockedUntil.Equal(wa.LockedUntil) {
			return fmt.Sprintf("attempt %+v, module %+v", na, wa)
		}
	case flow.EffectWait:
		if ne.Version != we.Version || ne.Token != we.Token || ne.Wait != we.Wait {
			return fmt.Sprintf("wait %+v, module %+v", *ne, *we)
		}
	case flow.EffectAnswer:
		if !reflect.DeepEqual(ne.Panic, we.Panic) {
			return fmt.Sprintf("panic %v, module %v", ne.Panic, we.Panic)
		}
		nr, nerr := nf.Result()
		wr, werr := wf.Result()
		if !reflect.DeepEqual(nr, wr) {
			return fmt.Sprintf("result %+v, module %+v", nr, wr)
		}
		return compareFlowErrors(nerr, werr)
	}
	return ""
}

// compareFlowErrors holds two errors to the same text and the same
// answers to errors.Is for every sentinel a host or a caller tests.
func compareFlowErrors(native, module error) string {
	if (native == nil) != (module == nil) {
		return fmt.Sprintf("error %v, module %v", native, module)
	}
	if native == nil {
		return ""
	}
	if native.Error() != module.Error() {
		return fmt.Sprintf("error text %q, module %q", native.Error(), module.Error())
	}
	targets := []error{flow.ErrInvalidKey, flow.ErrInvalidRequest, flow.ErrKeyMisuse, flow.ErrInProgress, flow.ErrOutcomeUnknown,
		flow.ErrNotExecuted, flow.ErrStoreUnavailable, flow.ErrStoreRejected, flow.ErrResponseInvalid, flow.ErrLeaseLost,
		context.Canceled, context.DeadlineExceeded, store.ErrRejected}
	targets = append(targets, abi.Sentinels...) // the core's refusals
	for _, target := range targets {
		if errors.Is(native, target) != errors.Is(module, target) {
			return fmt.Sprintf("errors.Is(%q, %v): native %v, module %v", native, target, errors.Is(native, target), errors.Is(module, target))
		}
	}
	var ne, we *flow.Error
	if errors.As(native, &ne) != errors.As(module, &we) || ne != nil && (ne.Code != we.Code || ne.Status != we.Status || ne.RetryAfter != we.RetryAfter) {
		return fmt.Sprintf("flow error %+v, module %+v", ne, we)
	}
	var nm, wm *flow.KeyMisuseError // the stored fingerprint a 422 names the differing parts by
	if errors.As(native, &nm) != errors.As(module, &wm) || nm != nil && nm.Stored != wm.Stored {
		return fmt.Sprintf("key misuse cause %+v, module %+v", nm, wm)
	}
	return ""
}

// beginBoth begins req natively and in the module, under the default policy.
func beginBoth(t *testing.T, h *Host, req flow.Request) (*flow.Flow, *Flow) {
	t.Helper()
	cfg := flow.Config{Policy: core.PolicyDefault()}
	native := cfg
	if err := native.Fill(); err != nil {
		t.Fatal(err)
	}
	nf, err := native.Begin(req)
	if err != nil {
		t.Fatal(err)
	}
	wf, err := h.BeginFlow(cfg, req)
	if err != nil {
		t.Fatal(err)
	}
	return nf, wf
}

// TestFlowOutOfStepPanic: a panic reported out of step (while the flow
// asks for its reserve) ends the flow as any report out of step does, and
// the answer carries no panic to raise: no action ran.
func TestFlowOutOfStepPanic(t *testing.T) {
	h := testHost(t)
	rawAnswers = true
	defer func() { rawAnswers = false }()
	nf, wf := beginBoth(t, h, flow.Request{Scope: genScope, Fingerprint: genFPs[1]})
	defer wf.Close()
	panicked := &flow.PanicError{Value: "boom"}
	nf.Ran(core.Response{}, panicked)
	wf.Ran(core.Response{}, panicked)
	if d := compareFlows(nf, wf); d != "" {
		t.Fatal(d)
	}
	if !wf.Done() || wf.Next().Panic != nil {
		t.Fatalf("after a panic out of step: done %v, panic %v; want done, no panic", wf.Done(), wf.Next().Panic)
	}
}

// TestFlowKeyMisuseCarriesStored: a key's misuse answered through the
// module carries the fingerprint the key's record holds, byte for byte,
// as the native Flow's does (an HTTP edge names the parts that differ by
// it), for each fingerprint the generators draw.
func TestFlowKeyMisuseCarriesStored(t *testing.T) {
	h := testHost(t)
	rawAnswers = true
	defer func() { rawAnswers = false }()
	for _, stored := range append(genFPs, core.Fingerprint{0: 0xff, 31: 0x01}) {
		nf, wf := beginBoth(t, h, flow.Request{Scope: genScope, Fingerprint: genFPs[1]})
		a := store.Applied{Before: core.StatusCompleted}
		a.Record.Scope, a.Record.Status, a.Record.Fingerprint, a.Record.Token, a.Record.Version = genScope, core.StatusCompleted, stored, 7, 3
		a.Transition.Decision.Kind = core.DecisionMismatch
		nf.Applied(&a, nil)
		wf.Applied(&a, nil)
		if d := compareFlows(nf, wf); d != "" {
			t.Fatal(d)
		}
		_, err := wf.Result()
		var m *flow.KeyMisuseError
		if !errors.As(err, &m) || m.Stored != stored {
			t.Fatalf("stored %x: the module's answer %v (%+v), want a key misuse carrying it", stored, err, m)
		}
		wf.Close()
	}
}
