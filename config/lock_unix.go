//go:build unix

package config

import (
	"errors"
	"os"

	"github.com/kinetic-run/kinetic/internal/filelock"
)

// lockDir takes an exclusive lock on dir. Locking the directory rather than the file
// matters: the file is replaced by rename on every save, so a lock on it would guard an
// inode nobody opens again.
func lockDir(dir string) (unlock func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := filelock.Wait(d, filelock.Exclusive); err != nil {
		d.Close()
		// A file system without flock support (some network mounts) should not stop the
		// user from editing profiles; the write itself is still atomic.
		if errors.Is(err, filelock.ErrUnsupported) {
			return func() {}, nil
		}
		return nil, err
	}
	return func() { filelock.Unlock(d); d.Close() }, nil
}
