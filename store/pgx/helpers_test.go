package pgxstore

import (
	"runtime"
	"strconv"
	"testing"
)

func itoa(n int) string { return strconv.Itoa(n) }

// historiesForTest keeps make test's share of the suite to about a minute
// on two cores; IDEM_LIN_HISTORIES runs it longer.
func historiesForTest() int {
	if testing.Short() {
		return 3
	}
	return 10
}

func gomaxprocs() int { return runtime.GOMAXPROCS(0) }
