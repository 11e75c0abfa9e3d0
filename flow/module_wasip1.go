//go:build wasip1

package flow

// What differs in the wasm module from module_native.go.

// panicText is %v of a panic's value: in the module a panic's value is
// always text, as it crossed the ABI from the host that caught it.
func panicText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return "(a value that is not text)"
}

// counting is false: a module's flows count into MetricsNop, as the ABI
// carries no Metrics (a host counts what it reports, with Count), so the
// counting code is left out of the module.
func counting(Metrics) bool { return false }
