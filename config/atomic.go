package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// testHookBeforeRename, when set by a test, runs after the temporary file is written and
// synced and before it replaces the target; an error from it aborts the write. It stands
// in for failures (disk full, I/O error) that cannot be provoked for real in a test.
var testHookBeforeRename func(tmp string) error

// writeFileAtomic replaces path with data so that readers see either the old content or
// the new, never a mix, and a crash leaves no partial file: write a temporary file in the
// same directory (rename is only atomic within a file system), fsync it, rename it over
// the target, then fsync the directory so the rename itself survives a power cut.
// A symlink at path is followed, so a profiles file kept in a dotfiles repository stays
// a symlink.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) (err error) {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if testHookBeforeRename != nil {
		if err := testHookBeforeRename(tmp.Name()); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir fsyncs a directory. Some platforms and file systems cannot (EINVAL, or opening
// a directory is refused); the data is already safe in the file, so that is not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) && !isNotSupported(err) {
		return err
	}
	return nil
}
