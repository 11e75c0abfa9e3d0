package wasmcore

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem/core"
	"github.com/idemkit/idem/internal/scenario"
	"github.com/idemkit/idem/wasm/internal/abi"
)

var updateFixture = flag.Bool("update-fixture", false, "rewrite the fixtures of wasm/js/testdata from the Go code")

// keepFixture writes got to path with -update-fixture, and otherwise fails
// unless path holds exactly got; test is the test that writes it.
func keepFixture(t *testing.T, path, test string, got []byte) {
	t.Helper()
	if *updateFixture {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is stale (%v): run go test ./wasm/ -run %s -update-fixture", path, err, test)
	}
}

// keepJSONFixture is keepFixture of v as indented JSON.
func keepJSONFixture(t *testing.T, path, test string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	keepFixture(t, path, test, append(b, '\n'))
}

const fixturePath = "js/testdata/steps.json"

// TestNodeFixtureFresh regenerates the Node test's fixture: the golden
// scenarios, the extreme cases (extremeCases) and 60 rapid cases, each step
// with what the native core.Step answered. It fails if the checked-in file differs, so that the Node test
// always checks the JavaScript host against today's Go results; rerun with
// -update-fixture after a change of the core.
func TestNodeFixtureFresh(t *testing.T) {
	got, err := buildFixture(t)
	if err != nil {
		t.Fatal(err)
	}
	keepFixture(t, fixturePath, "TestNodeFixtureFresh", got)
}

// The fixture's JSON shape. 64-bit integers (tokens, versions, durations and
// times in Unix nanoseconds) are decimal strings, since JSON numbers lose
// them in JavaScript; the zero time is null; bytes are base64, fingerprints hex.
type (
	fixture struct {
		Comment string        `json:"comment"`
		Cases   []fixtureCase `json:"cases"`
	}
	fixtureCase struct {
		Name   string        `json:"name"`
		Policy fixturePolicy `json:"policy"`
		Start  fixtureRecord `json:"start"`
		Steps  []fixtureStep `json:"steps"`
	}
	fixtureStep struct {
		Event      fixtureEvent       `json:"event"`
		Transition *fixtureTransition `json:"transition"`
		Error      *fixtureError      `json:"error"`
		Record     fixtureRecord      `json:"record"`
	}
	fixturePolicy struct {
		LeaseDuration        string `json:"leaseDuration"`
		TTL                  string `json:"ttl"`
		InFlightWait         string `json:"inFlightWait"`
		InFlightAnswer       uint8  `json:"inFlightAnswer"`
		RetryAfter           string `json:"retryAfter"`
		Expiry               uint8  `json:"expiry"`
		Fail                 uint8  `json:"fail"`
		ReconcileBackoffBase string `json:"reconcileBackoffBase"`
		ReconcileBackoffMax  string `json:"reconcileBackoffMax"`
		ReconcileAttemptsMax uint32 `json:"reconcileAttemptsMax"`
		TombstoneRetention   string `json:"tombstoneRetention"`
		KeyBytesMax          fxInt  `json:"keyBytesMax"`
		RequestBytesMax      fxInt  `json:"requestBytesMax"`
		ResponseBytesMax     fxInt  `json:"responseBytesMax"`
	}
	fixtureRecord struct {
		Tenant            string          `json:"tenant"`
		Principal         string          `json:"principal"`
		UseCase           string          `json:"useCase"`
		Key               string          `json:"key"`
		Status            uint8           `json:"status"`
		Fingerprint       string          `json:"fingerprint"`
		Token             string          `json:"token"`
		Version           string          `json:"version"`
		Response          fixtureResponse `json:"response"`
		LastErrorCode     string          `json:"lastErrorCode"`
		LockedUntil       *string         `json:"lockedUntil"`
		ReconcileAfter    *string         `json:"reconcileAfter"`
		ReconcileAttempts uint32          `json:"reconcileAttempts"`
		CreatedAt         *string         `json:"createdAt"`
		CompletedAt       *string         `json:"completedAt"`
		ExpiresAt         *string         `json:"expiresAt"`
	}
	fixtureResponse struct {
		StatusCode    fxInt            `json:"statusCode"`
		Headers       *[]fixtureHeader `json:"headers"`
		Body          *string          `json:"body"`
		SchemaVersion uint32           `json:"schemaVersion"`
	}
	fixtureHeader struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	fixtureEvent struct {
		Kind        uint8           `json:"kind"`
		Now         *string         `json:"now"`
		Fingerprint string          `json:"fingerprint"`
		Token       string          `json:"token"`
		Response    fixtureResponse `json:"response"`
		ErrorCode   string          `json:"errorCode"`
		Verdict     uint8           `json:"verdict"`
	}
	fixtureTransition struct {
		DecisionKind  uint8  `json:"decisionKind"`
		DecisionToken string `json:"decisionToken"`
		RetryAfter    string `json:"retryAfter"`
		WriteKind     uint8  `json:"writeKind"`
		ExpectVersion string `json:"expectVersion"`
		ExpectToken   string `json:"expectToken"`
	}
	fixtureError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
)

// sentinelNames are the Go names of abi.Sentinels, in their order: the
// JavaScript host reports an error's identity by the same names.
var sentinelNames = []string{
	"ErrInvalidScope", "ErrInvalidKey", "ErrFingerprintLength", "ErrFingerprintMissing",
	"ErrTimeMissing", "ErrTokenMissing", "ErrTokenNotFresh", "ErrResponseInvalid",
	"ErrResponseTooLarge", "ErrUnknownEvent", "ErrUnknownVerdict", "ErrInvalidRecord",
	"ErrInvalidPolicy", "ErrInvalidErrorCode",
}

// fxTime is t in Unix nanoseconds, as the Node host has it: Unix seconds
// times 10^9 plus nanoseconds, which for a time outside int64 nanoseconds
// (before 1678, after 2262) UnixNano cannot give.
func fxTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	n := new(big.Int).Mul(big.NewInt(t.Unix()), big.NewInt(1e9))
	s := n.Add(n, big.NewInt(int64(t.Nanosecond()))).String()
	return &s
}

// fxInt is an int of the core that JavaScript takes as a number: a JSON
// number while it is a safe integer (|v| < 2^53), else a decimal string,
// which the Node test reads as a bigint.
type fxInt int64

func (v fxInt) MarshalJSON() ([]byte, error) {
	if v > -(1<<53) && v < 1<<53 {
		return strconv.AppendInt(nil, int64(v), 10), nil
	}
	return strconv.AppendQuote(nil, strconv.FormatInt(int64(v), 10)), nil
}

func fxU64(v uint64) string { return strconv.FormatUint(v, 10) }
func fxI64(v int64) string  { return strconv.FormatInt(v, 10) }

func fxResponse(r core.Response) fixtureResponse {
	out := fixtureResponse{StatusCode: fxInt(r.StatusCode), SchemaVersion: r.SchemaVersion}
	if r.Headers != nil {
		hs := make([]fixtureHeader, len(r.Headers))
		for i, h := range r.Headers {
			hs[i] = fixtureHeader{h.Name, h.Value}
		}
		out.Headers = &hs
	}
	if r.Body != nil {
		b := base64.StdEncoding.EncodeToString(r.Body)
		out.Body = &b
	}
	return out
}

func fxRecord(r core.Record) fixtureRecord {
	return fixtureRecord{
		Tenant: r.Scope.Tenant, Principal: r.Scope.Principal, UseCase: r.Scope.UseCase, Key: r.Scope.Key,
		Status: uint8(r.Status), Fingerprint: hex.EncodeToString(r.Fingerprint[:]),
		Token: fxU64(uint64(r.Token)), Version: fxU64(r.Version), Response: fxResponse(r.Response),
		LastErrorCode: string(r.LastErrorCode), LockedUntil: fxTime(r.LockedUntil), ReconcileAfter: fxTime(r.ReconcileAfter),
		ReconcileAttempts: r.ReconcileAttempts, CreatedAt: fxTime(r.CreatedAt), CompletedAt: fxTime(r.CompletedAt),
		ExpiresAt: fxTime(r.ExpiresAt),
	}
}

func fxPolicy(p core.Policy) fixturePolicy {
	return fixturePolicy{
		LeaseDuration: fxI64(int64(p.LeaseDuration)), TTL: fxI64(int64(p.TTL)), InFlightWait: fxI64(int64(p.InFlightWait)),
		InFlightAnswer: uint8(p.InFlightAnswer), RetryAfter: fxI64(int64(p.RetryAfter)), Expiry: uint8(p.Expiry), Fail: uint8(p.Fail),
		ReconcileBackoffBase: fxI64(int64(p.ReconcileBackoffBase)), ReconcileBackoffMax: fxI64(int64(p.ReconcileBackoffMax)),
		ReconcileAttemptsMax: p.ReconcileAttemptsMax, TombstoneRetention: fxI64(int64(p.TombstoneRetention)), KeyBytesMax: fxInt(p.KeyBytesMax), RequestBytesMax: fxInt(p.RequestBytesMax),
		ResponseBytesMax: fxInt(p.ResponseBytesMax),
	}
}

func fxEvent(e core.Event) fixtureEvent {
	return fixtureEvent{
		Kind: uint8(e.Kind), Now: fxTime(e.Now), Fingerprint: hex.EncodeToString(e.Fingerprint[:]),
		Token: fxU64(uint64(e.Token)), Response: fxResponse(e.Response), ErrorCode: string(e.ErrorCode), Verdict: uint8(e.Verdict),
	}
}

func fxTransition(res core.Transition) *fixtureTransition {
	return &fixtureTransition{
		DecisionKind: uint8(res.Decision.Kind), DecisionToken: fxU64(uint64(res.Decision.Token)),
		RetryAfter: fxI64(int64(res.Decision.RetryAfter)), WriteKind: uint8(res.Write.Kind),
		ExpectVersion: fxU64(res.Write.ExpectVersion), ExpectToken: fxU64(uint64(res.Write.ExpectToken)),
	}
}

// fixtureCaseOf steps c natively and records every step.
func fixtureCaseOf(name string, c stepCase) fixtureCase {
	fc := fixtureCase{Name: name, Policy: fxPolicy(c.Policy), Start: fxRecord(c.Start)}
	cur := c.Start
	for _, ev := range c.Events {
		p := c.Policy
		e := ev
		res, err := core.Step(&cur, &e, &p)
		s := fixtureStep{Event: fxEvent(ev), Record: fxRecord(cur)}
		if err != nil {
			s.Error = &fixtureError{Code: codeName(abi.SentinelOf(err)), Message: err.Error()}
		} else {
			s.Transition = fxTransition(res)
		}
		fc.Steps = append(fc.Steps, s)
	}
	return fc
}

func buildFixture(t *testing.T) ([]byte, error) {
	if len(sentinelNames) != len(abi.Sentinels) {
		return nil, fmt.Errorf("sentinelNames has %d names for %d sentinels", len(sentinelNames), len(abi.Sentinels))
	}
	fx := fixture{Comment: "generated by go test ./wasm/ -run TestNodeFixtureFresh -update-fixture from the native core; read by idem.test.mjs"}
	files, err := filepath.Glob("../core/testdata/step/*.txt")
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no Step scenarios: %v", err)
	}
	for _, file := range files {
		fx.Cases = append(fx.Cases, scenarioCases(filepath.Base(file), scenario.ReadSteps(t, file))...)
	}
	for _, x := range extremeCases() {
		fx.Cases = append(fx.Cases, fixtureCaseOf("extreme "+x.name, x.c))
	}
	gen := genCase(genOptions{bodyBytesMax: 2 << 10, kind200: true})
	for seed := 0; seed < 60; seed++ {
		fx.Cases = append(fx.Cases, fixtureCaseOf(fmt.Sprintf("rapid example %d", seed), gen.Example(seed)))
	}
	b, err := json.MarshalIndent(fx, "", " ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// scenarioCases are the fixture's cases of one Step scenario: a policy
// command starts a new case from the record so far, and an event on
// another scope (which has no record) is a case of its own.
func scenarioCases(file string, cmds []scenario.StepCommand) []fixtureCase {
	var out []fixtureCase
	c := stepCase{Policy: core.PolicyDefault(), Start: core.Record{Scope: scenario.Scope}}
	name := file
	flush := func() {
		if len(c.Events) > 0 {
			out = append(out, fixtureCaseOf("scenario "+name, c))
		}
	}
	for _, cmd := range cmds {
		at := fmt.Sprintf("%s:%s", file, cmd.Pos[strings.LastIndex(cmd.Pos, ":")+1:])
		switch {
		case cmd.Cmd == "policy":
			flush()
			cur := c.Start
			for _, ev := range c.Events {
				p, e := c.Policy, ev
				core.Step(&cur, &e, &p)
			}
			c = stepCase{Policy: cmd.Policy, Start: cur}
			name = at
		case cmd.Other:
			one := stepCase{Policy: c.Policy, Start: core.Record{Scope: cmd.Scope}, Events: []core.Event{*cmd.Event}}
			out = append(out, fixtureCaseOf("scenario "+at, one))
		case cmd.Event != nil:
			c.Events = append(c.Events, *cmd.Event)
		}
	}
	flush()
	return out
}
