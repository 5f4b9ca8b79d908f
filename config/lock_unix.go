//go:build unix

package config

import (
	"errors"
	"os"
	"syscall"
)

// lockDir takes an exclusive flock on dir. Locking the directory rather than the file
// matters: the file is replaced by rename on every save, so a lock on it would guard an
// inode nobody opens again. The lock dies with the process, so a crash cannot leave it held.
func lockDir(dir string) (unlock func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(d.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		d.Close()
		// A file system without flock support (some network mounts) should not stop the
		// user from editing profiles; the write itself is still atomic.
		if errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.ENOLCK) {
			return func() {}, nil
		}
		return nil, err
	}
	return func() {
		syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
		d.Close()
	}, nil
}

func isNotSupported(err error) bool {
	return errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EINVAL)
}
