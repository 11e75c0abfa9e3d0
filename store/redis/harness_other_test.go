//go:build !linux

package redisstore

import "os/exec"

// dieWithParent: only Linux can tie a child's life to its parent's; the
// servers are killed by TestMain.
func dieWithParent(*exec.Cmd) {}
