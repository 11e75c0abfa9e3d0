package fingerprint

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs the rapid properties 1000 times each unless -rapid.checks
// (or RAPID_CHECKS) says otherwise: they are fast, and more cases find more.
func TestMain(m *testing.M) {
	flag.Parse()
	set := os.Getenv("RAPID_CHECKS") != ""
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		if err := flag.Set("rapid.checks", "1000"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
