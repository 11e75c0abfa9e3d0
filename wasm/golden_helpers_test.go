package wasmcore

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/idemkit/idem/core"
)

// This file reads the core's golden scenarios (core/testdata/*.txt) from
// outside package core. The format is documented on core's
// TestGoldenScenarios; this is a second, small reader of it, so that the core
// exports nothing for the sake of the wasm tests.

// goldenT0 is the origin of the scenarios' at= offsets.
var goldenT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// goldenScope is the scope every scenario's record has.
var goldenScope = core.Scope{Tenant: "acme", Principal: "user-1", UseCase: "payments.create", Key: "550e8400-e29b-41d4-a716-446655440000"}

// goldenCommand is one command of a scenario with what it expects.
type goldenCommand struct {
	File, Line string
	LineNo     int
	Policy     *core.Policy // set for a policy command: the policy from here on
	Event      *core.Event  // set for an event command
	// Scope is set for an event command with key=: the event is applied to
	// that scope, which has no record, and the scenario's record stays.
	Scope    *core.Scope
	Expected string // the block after "----"
}

// goldenScenario is one file.
type goldenScenario struct {
	File     string
	Commands []goldenCommand
}

func readGoldenScenarios() ([]goldenScenario, error) {
	files, err := filepath.Glob("../core/testdata/*.txt")
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no scenarios under ../core/testdata")
	}
	var out []goldenScenario
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		s, err := parseGolden(filepath.Base(f), string(src))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func parseGolden(file, src string) (goldenScenario, error) {
	s := goldenScenario{File: file}
	policy := core.PolicyDefault()
	lines := strings.Split(strings.TrimRight(src, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd := goldenCommand{File: file, Line: line, LineNo: i + 1}
		if i+1 < len(lines) && lines[i+1] == "----" {
			i++
			var exp []string
			for i+1 < len(lines) && lines[i+1] != "" {
				i++
				exp = append(exp, lines[i])
			}
			cmd.Expected = strings.Join(exp, "\n")
		}
		if err := parseGoldenCommand(&cmd, &policy); err != nil {
			return s, fmt.Errorf("%s:%d: %w", file, i+1, err)
		}
		s.Commands = append(s.Commands, cmd)
	}
	return s, nil
}

func parseGoldenCommand(cmd *goldenCommand, policy *core.Policy) error {
	fields := strings.Fields(cmd.Line)
	args := map[string]string{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("argument %q is not key=value", f)
		}
		args[k] = v
	}
	var err error
	dur := func(k string) time.Duration {
		d, e := time.ParseDuration(args[k])
		if e != nil && err == nil {
			err = fmt.Errorf("%s: %w", k, e)
		}
		return d
	}
	num := func(k string) uint64 {
		if args[k] == "" {
			return 0
		}
		n, e := strconv.ParseUint(args[k], 10, 64)
		if e != nil && err == nil {
			err = fmt.Errorf("%s: %w", k, e)
		}
		return n
	}
	code := args["code"]
	if strings.HasPrefix(code, `"`) {
		var e error
		if code, e = strconv.Unquote(code); e != nil {
			return fmt.Errorf("code: %w", e)
		}
	}
	if key, ok := args["key"]; ok {
		k, e := strconv.Unquote(key)
		if e != nil {
			return fmt.Errorf("key: %w", e)
		}
		scope := goldenScope
		scope.Key = k
		cmd.Scope = &scope
	}
	ev := core.Event{Token: core.Token(num("token")), ErrorCode: core.ErrorCode(code)}
	if args["at"] != "" {
		ev.Now = goldenT0.Add(dur("at"))
	}
	if fp := args["fp"]; fp != "" {
		ev.Fingerprint = sha256.Sum256([]byte(fp))
	}
	if args["status"] != "" {
		ev.Response = core.Response{StatusCode: int(num("status")), Body: []byte(args["body"]), SchemaVersion: 1}
	}
	switch fields[0] {
	case "policy":
		for k, v := range args {
			switch k {
			case "lease":
				policy.LeaseDuration = dur(k)
			case "ttl":
				policy.TTL = dur(k)
			case "backoff_base":
				policy.ReconcileBackoffBase = dur(k)
			case "backoff_cap":
				policy.ReconcileBackoffMax = dur(k)
			case "retention":
				policy.TombstoneRetention = dur(k)
			case "attempts_max":
				policy.ReconcileAttemptsMax = uint32(num(k))
			case "expiry":
				policy.Expiry = map[string]core.ExpiryMode{"soft": core.ExpirySoft, "hard": core.ExpiryHard}[v]
			case "fail":
				policy.Fail = map[string]core.FailMode{"keep": core.FailKeep, "evict": core.FailEvict}[v]
			default:
				return fmt.Errorf("unknown policy field %s", k)
			}
		}
		p := *policy
		cmd.Policy = &p
		return err
	case "record":
		return err
	case "reserve":
		ev.Kind = core.EventReserve
	case "complete":
		ev.Kind = core.EventComplete
	case "fail":
		ev.Kind = core.EventFail
	case "mark_unknown":
		ev.Kind = core.EventMarkUnknown
	case "heartbeat":
		ev.Kind = core.EventHeartbeat
	case "resolve":
		ev.Kind = core.EventResolve
		ev.Verdict = map[string]core.Verdict{"executed": core.VerdictExecuted, "not_executed": core.VerdictNotExecuted, "still_unknown": core.VerdictStillUnknown}[args["verdict"]]
	case "sweep":
		ev.Kind = core.EventSweep
	default:
		return fmt.Errorf("unknown command %q", fields[0])
	}
	cmd.Event = &ev
	return err
}

// describeStep is what a scenario expects after an event command, in the
// core's golden format (without the record for a command on another scope).
func describeStep(cmd *goldenCommand, res core.Transition, rec *core.Record, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	if cmd.Scope != nil {
		return res.Describe()
	}
	return res.Describe() + "\nrecord: " + rec.Describe()
}
