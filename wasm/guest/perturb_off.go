//go:build wasip1 && !perturb

package main

import "github.com/idemkit/idem/core"

// perturb and trap do nothing in the real module; see perturb_on.go.
func perturb(*core.Transition, *core.Event) {}
func trap(*core.Event)                      {}
