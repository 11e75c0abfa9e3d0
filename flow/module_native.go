//go:build !wasip1

package flow

import "fmt"

// What differs in the wasm module (module_wasip1.go), which must stay
// small: there fmt is not linked (it would double the module's size), and
// no counter is kept (the ABI carries no Metrics).

// panicText is fmt's %v of a panic's value.
func panicText(v any) string { return fmt.Sprint(v) }

// counting reports whether m counts anything: MetricsNop, the default,
// needs no labels built and no call.
func counting(m Metrics) bool {
	_, nop := m.(MetricsNop)
	return !nop
}
