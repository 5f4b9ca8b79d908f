//go:build unix

// Package filelock serialises processes on this machine with advisory file locks: the
// test helpers that build tools into the shared cache, and the one test cluster a machine
// runs at a time.
package filelock

import (
	"os"
	"syscall"
)

// Lock takes an exclusive advisory lock on path (created if missing), waiting for it.
// The lock is released by the returned function, or when the process exits.
func Lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
