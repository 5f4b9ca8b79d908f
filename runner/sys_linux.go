package runner

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// preallocate makes the file hold size bytes of disk now (the reserve of the disk guard).
func preallocate(f *os.File, size int64) error { return unix.Fallocate(int(f.Fd()), 0, 0, size) }

// groupAttr puts a call in its own process group, killed when the runner dies.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
