//go:build unix

package remove

import "syscall"

var errIsDir error = syscall.EISDIR

func unlink(path string) error {
	for {
		if err := syscall.Unlink(path); err != syscall.EINTR {
			return err
		}
	}
}

func rmdir(path string) error {
	for {
		if err := syscall.Rmdir(path); err != syscall.EINTR {
			return err
		}
	}
}
