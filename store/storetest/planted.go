package storetest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// PlantedDriver is a driver with one planted bug, and the case of the
// suite that must catch it: a driver's tests show with CatchPlanted that
// the suite catches the bugs they plant.
type PlantedDriver struct {
	Name  string // the bug
	Cases string // the sub-test of RunStoreSuite that must fail, a path: "contract/wait"
	// Suite runs RunStoreSuite over the driver, its bug planted or not.
	Suite func(t *testing.T, planted bool)
}

// Environment of a child run: the driver, and whether its bug is planted.
const (
	envPlanted   = "IDEM_STORETEST_PLANTED"
	envPlantedOn = "IDEM_STORETEST_PLANTED_ON"
)

// CatchPlanted shows that each driver's Cases fire on its bug: over the
// driver with the bug they fail, and over the same driver without it they
// pass (so that the failure is the bug's). Each case fails its test, so the
// suite runs over the driver in a child process: this test binary run
// again with only the calling test and the driver's Cases selected, env
// added to its environment (a driver's servers, say). In the child,
// CatchPlanted runs the driver's Suite and returns: the calling test must
// do nothing else that fails.
func CatchPlanted(t *testing.T, drivers []PlantedDriver, env ...string) {
	if name := os.Getenv(envPlanted); name != "" {
		for _, d := range drivers {
			if d.Name == name {
				d.Suite(t, os.Getenv(envPlantedOn) == "1")
				return
			}
		}
		t.Fatalf("%s=%q: no such planted driver", envPlanted, name)
	}
	test, _, _ := strings.Cut(t.Name(), "/")
	for _, d := range drivers {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			if out, err := d.child(t, test, false, env); err != nil {
				t.Fatalf("the suite's %s fails over the driver without its bug: %v\n%s", d.Cases, err, out)
			}
			out, err := d.child(t, test, true, env)
			if err == nil {
				t.Fatalf("the suite's %s passes over a driver with the bug %q", d.Cases, d.Name)
			}
			if want := "--- FAIL: " + test + "/" + d.Cases + " "; !strings.Contains(out, want) {
				t.Fatalf("over the driver with the bug %q the suite failed, but not in %s:\n%s", d.Name, d.Cases, out)
			}
		})
	}
}

// child runs d's cases of the suite in a child process and returns its
// output, and an error when it failed.
func (d PlantedDriver) child(t *testing.T, test string, planted bool, env []string) (string, error) {
	pattern := "^" + test + "$"
	for _, c := range strings.Split(d.Cases, "/") {
		pattern += "/^" + c + "$"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+pattern, "-test.count=1", "-test.timeout=2m")
	on := "0"
	if planted {
		on = "1"
	}
	// The driver's histories are its own: IDEM_LIN_HISTORIES (the long
	// run's) would leave a race too few histories to show, or take long.
	base := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, EnvHistories+"=") })
	cmd.Env = append(append(base, env...), envPlanted+"="+d.Name, envPlantedOn+"="+on)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running the child: %v", err)
	}
	return string(out), err
}
