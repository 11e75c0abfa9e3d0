//go:build !linux

package redisproc

import "os/exec"

// dieWithParent: only Linux can tie a child's life to its parent's; the
// caller kills its servers itself.
func dieWithParent(*exec.Cmd) {}
