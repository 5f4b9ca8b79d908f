package outdir

import (
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// noReplace is cleared once the file system refused renameat2's RENAME_NOREPLACE.
var noReplace atomic.Bool

// rename renames the directory old to new, failing if new exists. With
// RENAME_NOREPLACE it is one system call: os.Rename first looks at new (an lstat per
// rename, two per input).
func rename(old, new string) error {
	if !noReplace.Load() {
		err := retryEINTR(func() error { return unix.Renameat2(unix.AT_FDCWD, old, unix.AT_FDCWD, new, unix.RENAME_NOREPLACE) })
		switch err {
		case nil:
			return nil
		case syscall.EINVAL, syscall.ENOSYS:
			noReplace.Store(true) // not here: os.Rename's look, then the rename
		default:
			return &os.LinkError{Op: "rename", Old: old, New: new, Err: err}
		}
	}
	return os.Rename(old, new)
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}
