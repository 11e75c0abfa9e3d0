package scenario

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/idemkit/idem/core"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as the testing package's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// readFails reads cmd as one Step command and says what it failed with
// ("" when it read).
func readFails(t *testing.T, cmd string, args ...datadriven.CmdArg) string {
	r := &fatalRecorder{TB: t}
	d := &datadriven.TestData{Pos: "test:1", Cmd: cmd, CmdArgs: args}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := core.PolicyDefault()
		readStep(r, d, &p)
	}()
	<-done
	return r.msg
}

func arg(key string, vals ...string) datadriven.CmdArg {
	return datadriven.CmdArg{Key: key, Vals: vals}
}

// TestScenarioTyposFail: a scenario with a typo fails at its line instead
// of reading a zero.
func TestScenarioTyposFail(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		args []datadriven.CmdArg
		want string // in the failure; "" for none
	}{
		{"reserve", []datadriven.CmdArg{arg("fp", "A"), arg("token", "7"), arg("at", "1s")}, ""},
		{"fail", []datadriven.CmdArg{arg("token", "1"), arg("code", `"card\x00declined"`)}, ""},
		{"reserve", []datadriven.CmdArg{arg("tokn", "1")}, "takes no argument tokn"},
		{"reserve", []datadriven.CmdArg{arg("at", "1 second")}, "at:"},
		{"reserve", []datadriven.CmdArg{arg("token", "-1")}, "token:"},
		{"resolve", []datadriven.CmdArg{arg("verdict", "yes")}, "want one of"},
		{"fail", []datadriven.CmdArg{arg("code", `"unterminated`)}, "code:"},
		{"policy", []datadriven.CmdArg{arg("lease", "5x")}, "lease:"},
		{"policy", []datadriven.CmdArg{arg("ttl_max", "1h")}, "takes no argument ttl_max"},
		{"reserv", nil, "unknown command reserv"},
	} {
		got := readFails(t, c.cmd, c.args...)
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s %v: failed with %q, want it read", c.cmd, c.args, got)
		case c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%s %v: failed with %q, want a failure that says %q", c.cmd, c.args, got, c.want)
		}
	}
}
