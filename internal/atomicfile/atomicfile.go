// Package atomicfile writes a file whole or not at all: through a temporary file in the
// same directory, renamed over the target only once every byte is written and the file
// closed. Any error (ENOSPC, EIO) removes the temporary file and leaves the old content.
// It does not fsync: its callers (the store, caches) want atomicity, not durability
// across a power cut (config's profile writer syncs, on its own).
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to path with mode perm, creating missing directories with dirPerm.
// The temporary file is named ".tmp-*" in path's directory.
func Write(path string, data []byte, perm, dirPerm fs.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-*")
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, dirPerm); err == nil {
			f, err = os.CreateTemp(dir, ".tmp-*")
		}
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && perm != 0o600 { // CreateTemp makes 0600
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
