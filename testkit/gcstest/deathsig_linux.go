package gcstest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the emulator killed when the process that started it dies: a test
// binary or bench killed by a signal otherwise leaves it running, holding its port and
// every file descriptor it inherited (a `flock` lock among them).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
