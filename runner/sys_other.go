//go:build !linux

package runner

import (
	"errors"
	"os"
	"syscall"
)

// preallocate is Linux's fallocate; elsewhere the disk guard goes without its reserve.
func preallocate(f *os.File, size int64) error { return errors.ErrUnsupported }

// groupAttr puts a call in its own process group. Without Linux's parent-death signal
// the call outlives a runner killed with SIGKILL (the supervisor still kills its group
// when it notices).
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// becomeSubreaper is Linux's PR_SET_CHILD_SUBREAPER; warm pods run on Linux only.
func becomeSubreaper() error { return errors.ErrUnsupported }
