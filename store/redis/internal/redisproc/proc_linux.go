package redisproc

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the server die with this process.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
