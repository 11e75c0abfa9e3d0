package redisstore

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the server die with the test binary, so that a
// binary killed by its timeout leaves no server behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
