package runner

import (
	"fmt"
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

// becomeSubreaper makes the runner the parent of every orphan its jobs leave (it is
// anyway as a container's PID 1), so survivors finds them.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
}
