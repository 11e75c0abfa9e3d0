package core

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var updateGolden = flag.Bool("update", false, "rewrite the expected output of core/testdata scenarios")

// TestGoldenScenarios runs every core/testdata/*.txt scenario. A scenario is
// a list of blocks separated by blank lines: a command, a line "----", then
// the expected output. The first line of a file says why it exists. With
// -update, the expected output is rewritten from what Step does now.
//
// Commands (times are offsets from 2026-01-01T00:00:00Z; fingerprints are
// named, fp=A meaning SHA-256("A")):
//
//	policy   lease= ttl= retention= expiry=soft|hard fail=keep|evict backoff_base= backoff_cap= attempts_max=
//	reserve  at= fp= token= [key="a Go string"] (the key of another scope, which has no record)
//	complete at= token= status= body=
//	fail     at= token= [code=] (code= may be a quoted Go string)
//	mark_unknown at= token= [code=]
//	heartbeat    at= token=
//	resolve  at= token= verdict=executed|not_executed|still_unknown [status= body=]
//	sweep    at=
//	record   (prints the current record)
func TestGoldenScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(src, []byte("# why: ")) {
				t.Fatalf("%s must start with a line '# why: ...'", file)
			}
			got := runScenario(t, string(src))
			if *updateGolden {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != string(src) {
				t.Errorf("%s differs from what Step does (rerun with -update to accept):\n%s", file, lineDiff(string(src), got))
			}
		})
	}
}

// runScenario replays the commands of src and returns src with every
// expected output replaced by the actual one.
func runScenario(t *testing.T, src string) string {
	s := scenario{policy: PolicyDefault(), cur: Record{Scope: scopeA}}
	var out strings.Builder
	lines := strings.Split(strings.TrimRight(src, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		out.WriteString(line + "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// Skip the old expected output.
		if i+1 < len(lines) && lines[i+1] == "----" {
			i++
			for i+1 < len(lines) && lines[i+1] != "" {
				i++
			}
		}
		out.WriteString("----\n")
		out.WriteString(s.run(t, line))
		out.WriteString("\n")
	}
	return out.String()
}

type scenario struct {
	policy Policy
	cur    Record
}

func (s *scenario) run(t *testing.T, line string) string {
	fields := strings.Fields(line)
	args := map[string]string{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("%q: argument %q is not key=value", line, f)
		}
		args[k] = v
	}
	dur := func(k string) time.Duration {
		d, err := time.ParseDuration(args[k])
		if err != nil {
			t.Fatalf("%q: %s: %v", line, k, err)
		}
		return d
	}
	num := func(k string) uint64 {
		if args[k] == "" {
			return 0
		}
		n, err := strconv.ParseUint(args[k], 10, 64)
		if err != nil {
			t.Fatalf("%q: %s: %v", line, k, err)
		}
		return n
	}
	code := args["code"]
	if strings.HasPrefix(code, `"`) {
		var err error
		if code, err = strconv.Unquote(code); err != nil {
			t.Fatalf("%q: code: %v", line, err)
		}
	}
	ev := Event{Token: Token(num("token")), ErrorCode: ErrorCode(code)}
	if args["at"] != "" {
		ev.Now = t0.Add(dur("at"))
	}
	if fp := args["fp"]; fp != "" {
		ev.Fingerprint = sha256.Sum256([]byte(fp))
	}
	if args["status"] != "" {
		ev.Response = Response{StatusCode: int(num("status")), Body: []byte(args["body"]), SchemaVersion: 1}
	}
	switch fields[0] {
	case "policy":
		for k := range args {
			switch k {
			case "lease":
				s.policy.LeaseDuration = dur(k)
			case "ttl":
				s.policy.TTL = dur(k)
			case "backoff_base":
				s.policy.ReconcileBackoffBase = dur(k)
			case "backoff_cap":
				s.policy.ReconcileBackoffMax = dur(k)
			case "retention":
				s.policy.TombstoneRetention = dur(k)
			case "attempts_max":
				s.policy.ReconcileAttemptsMax = uint32(num(k))
			case "expiry":
				s.policy.Expiry = map[string]ExpiryMode{"soft": ExpirySoft, "hard": ExpiryHard}[args[k]]
			case "fail":
				s.policy.Fail = map[string]FailMode{"keep": FailKeep, "evict": FailEvict}[args[k]]
			default:
				t.Fatalf("%q: unknown policy field %s", line, k)
			}
		}
		return "ok"
	case "record":
		return s.cur.Describe()
	case "reserve":
		ev.Kind = EventReserve
	case "complete":
		ev.Kind = EventComplete
	case "fail":
		ev.Kind = EventFail
	case "mark_unknown":
		ev.Kind = EventMarkUnknown
	case "heartbeat":
		ev.Kind = EventHeartbeat
	case "resolve":
		ev.Kind = EventResolve
		ev.Verdict = map[string]Verdict{"executed": VerdictExecuted, "not_executed": VerdictNotExecuted, "still_unknown": VerdictStillUnknown}[args["verdict"]]
	case "sweep":
		ev.Kind = EventSweep
	default:
		t.Fatalf("unknown command %q", fields[0])
	}
	if key, ok := args["key"]; ok {
		// Another key of the same tenant, principal and use case, which
		// has no record: what Step answers for it is printed, and the
		// scenario's record stays as it was.
		k, err := strconv.Unquote(key)
		if err != nil {
			t.Fatalf("%q: key must be a quoted Go string: %v", line, err)
		}
		other := Record{Scope: s.cur.Scope}
		other.Scope.Key = k
		r, err := step(other, ev, s.policy)
		if err != nil {
			return "error: " + err.Error()
		}
		return r.Describe()
	}
	r, err := step(s.cur, ev, s.policy)
	if err != nil {
		return "error: " + err.Error()
	}
	s.cur = r.Next
	return r.Describe() + "\nrecord: " + s.cur.Describe()
}

func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want: %s\n  got:  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}
