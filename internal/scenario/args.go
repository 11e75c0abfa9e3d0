package scenario

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// args reads one command's arguments, failing the test at the command's
// position on a value it cannot read: a scenario with a typo must not pass
// by reading a zero.
type args struct {
	t testing.TB
	d *datadriven.TestData
}

func argsOf(t testing.TB, d *datadriven.TestData) args { return args{t: t, d: d} }

func (a args) has(key string) bool { return a.d.HasArg(key) }

// text is the argument's value; a value in double quotes is a Go string
// literal, so that a scenario can spell any byte (key="caf\u00e9").
func (a args) text(key string) string {
	a.t.Helper()
	arg, ok := a.d.Arg(key)
	if !ok {
		return ""
	}
	v := arg.SingleVal(a.t)
	if strings.HasPrefix(v, `"`) {
		u, err := strconv.Unquote(v)
		if err != nil {
			a.d.Fatalf(a.t, "%s: %v", key, err)
		}
		return u
	}
	return v
}

func (a args) duration(key string) time.Duration {
	a.t.Helper()
	if !a.has(key) {
		return 0
	}
	d, err := time.ParseDuration(a.text(key))
	if err != nil {
		a.d.Fatalf(a.t, "%s: %v", key, err)
	}
	return d
}

func (a args) uint(key string) uint64 {
	a.t.Helper()
	if !a.has(key) {
		return 0
	}
	n, err := strconv.ParseUint(a.text(key), 10, 64)
	if err != nil {
		a.d.Fatalf(a.t, "%s: %v", key, err)
	}
	return n
}

// choice is the argument's value, one of names (their index), or dflt when
// the argument is absent.
func (a args) choice(key string, dflt int, names ...string) int {
	a.t.Helper()
	if !a.has(key) {
		return dflt
	}
	v := a.text(key)
	for i, n := range names {
		if n == v {
			return i
		}
	}
	a.d.Fatalf(a.t, "%s=%s: want one of %s", key, v, strings.Join(names, ", "))
	return 0
}

// only fails the test on an argument not in keys: every argument a
// command is given must mean something to it.
func (a args) only(keys ...string) {
	a.t.Helper()
	for _, arg := range a.d.CmdArgs {
		found := false
		for _, k := range keys {
			found = found || arg.Key == k
		}
		if !found {
			a.d.Fatalf(a.t, "%s takes no argument %s (it takes %s)", a.d.Cmd, arg.Key, strings.Join(keys, ", "))
		}
	}
}
