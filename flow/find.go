package flow

// find is errors.As for the error types the Flow looks for in an action's
// error, written without reflection: errors.As would link the runtime's
// reflection into the wasm module (25 KB of code, a tenth of what the Flow
// adds to it). Like errors.As it walks Unwrap() error and Unwrap() []error
// depth first; unlike it, it does not ask an error's own As method.
func find[T error](err error) (T, bool) {
	for err != nil {
		if t, ok := err.(T); ok {
			return t, true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if t, ok := find[T](e); ok {
					return t, true
				}
			}
			err = nil
		default:
			err = nil
		}
	}
	var zero T
	return zero, false
}
