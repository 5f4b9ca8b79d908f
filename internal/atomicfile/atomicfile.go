// Package atomicfile writes a file whole or not at all: a new file, where the file
// system allows (Linux, O_TMPFILE), as a file with no name that gets its name once every
// byte is written; otherwise through a temporary file in the same directory, renamed
// over the target only once every byte is written and the file closed. Any error
// (ENOSPC, EIO) removes the temporary file and leaves the old content.
// Write does not fsync: its callers (the store, caches) want atomicity, not durability
// across a power cut. WriteDurable does, for the files a person edits (the profiles).
package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
)

// Write writes data to path with mode perm, creating missing directories with dirPerm.
// The temporary file is named ".tmp-*" in path's directory.
func Write(path string, data []byte, perm, dirPerm fs.FileMode) error {
	return write(path, data, perm, dirPerm, false)
}

// WriteDurable is Write that also survives a power cut: the temporary file is fsynced
// before the rename and the directory after it. A symlink at path is followed, so a
// file kept in a dotfiles repository stays a link.
func WriteDurable(path string, data []byte, perm, dirPerm fs.FileMode) error {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	if err := write(path, data, perm, dirPerm, true); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// WriteFrom is Write for content read from r (to its end); it returns the bytes
// written. A failing r leaves the old content, as a failing write does.
func WriteFrom(path string, r io.Reader, perm, dirPerm fs.FileMode) (int64, error) {
	var n int64
	err := writeWith(path, perm, dirPerm, false, func(f *os.File) (err error) {
		n, err = io.Copy(f, r)
		return err
	})
	return n, err
}

// write is writeWith for bytes in hand, made of raw system calls: an *os.File costs
// three or four more per file (its registration with the poller, the non-blocking flag
// set and cleared), which a small file does not need, and which in a virtual machine,
// where a system call costs microseconds, were much of a small write's time.
func write(path string, data []byte, perm, dirPerm fs.FileMode, durable bool) error {
	dir := filepath.Dir(path)
	// The unnamed file first, without looking whether path exists: most files written
	// are new (a batch input's envelope, a job's objects), and the look was a system
	// call each; one that replaces another costs one more (the link that fails).
	if done, err := tryUnnamed(path, data, perm, dirPerm, durable, false); done {
		return err
	}
	fd, tmp, err := rawTemp(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, dirPerm); err == nil {
			fd, tmp, err = rawTemp(dir)
		}
	}
	if err != nil {
		return err
	}
	op := "write"
	err = WriteFD(fd, data)
	if err == nil && perm != 0o600 {
		op, err = "chmod", retry(func() error { return syscall.Fchmod(fd, uint32(perm.Perm())) })
	}
	if err == nil && durable {
		op, err = "sync", retry(func() error { return syscall.Fsync(fd) })
	}
	if cerr := syscall.Close(fd); err == nil && cerr != nil {
		op, err = "close", cerr
	}
	if err == nil {
		if err = syscall.Rename(tmp, path); err != nil {
			syscall.Unlink(tmp)
			return &os.LinkError{Op: "rename", Old: tmp, New: path, Err: err}
		}
		return nil
	}
	syscall.Unlink(tmp)
	return &fs.PathError{Op: op, Path: tmp, Err: err}
}

// noTmpfile is set once unnamed files failed here (a file system that refuses
// O_TMPFILE: NFS, FUSE, an old kernel; or no /proc to link them from): every write then
// takes the named temporary file.
var noTmpfile atomic.Bool

// tryUnnamed writes data to path as an unnamed file linked into place (writeUnnamed);
// done is false where that cannot be done here, and the caller writes it the old way.
func tryUnnamed(path string, data []byte, perm, dirPerm fs.FileMode, durable, exclusive bool) (done bool, err error) {
	dir := filepath.Dir(path)
	fd, ok, err := unnamedIn(dir, dirPerm)
	if err != nil || !ok {
		return err != nil, err
	}
	return writeUnnamed(fd, dir, path, data, perm, durable, exclusive, linkUnnamed)
}

// unnamedIn opens an unnamed file in dir (openUnnamed), making dir if it is missing; ok
// is false where the file system has no unnamed files.
func unnamedIn(dir string, dirPerm fs.FileMode) (int, bool, error) {
	fd, ok, err := openUnnamed(dir)
	if ok && errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, dirPerm); err != nil {
			return -1, false, err
		}
		fd, ok, err = openUnnamed(dir)
	}
	if ok && err != nil {
		return -1, false, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, ok, nil
}

// writeUnnamed writes data to the unnamed file fd and links it at path. A path that
// exists is replaced (the file linked beside it under a temporary name, then renamed
// over it) unless exclusive, when it is an error wrapping fs.ErrExist. done is false if
// the file could not be linked for want of /proc: the caller writes it the old way. link
// is linkUnnamed (a test's may fail).
func writeUnnamed(fd int, dir, path string, data []byte, perm fs.FileMode, durable, exclusive bool, link func(fd int, path string) error) (done bool, err error) {
	defer syscall.Close(fd)
	op, err := "write", WriteFD(fd, data)
	if err == nil && perm != 0o600 {
		op, err = "chmod", retry(func() error { return syscall.Fchmod(fd, uint32(perm.Perm())) })
	}
	if err == nil && durable {
		op, err = "sync", retry(func() error { return syscall.Fsync(fd) })
	}
	if err != nil {
		return true, &fs.PathError{Op: op, Path: path, Err: err} // the file had no name: nothing is left
	}
	switch err = link(fd, path); {
	case err == nil:
		return true, nil
	case err == syscall.EEXIST && exclusive:
		return true, &os.LinkError{Op: "link", Old: dir + "/(new file)", New: path, Err: err}
	case err != syscall.EEXIST:
		if _, serr := os.Stat(dir); serr == nil {
			noTmpfile.Store(true) // dir is there: it is the descriptor's name that is not
		}
		return false, nil
	}
	tmp, err := tempName(dir, func(name string) error { return link(fd, name) })
	if err != nil {
		return true, &fs.PathError{Op: "link", Path: tmp, Err: err}
	}
	if err = syscall.Rename(tmp, path); err != nil {
		syscall.Unlink(tmp)
		return true, &os.LinkError{Op: "rename", Old: tmp, New: path, Err: err}
	}
	return true, nil
}

// rawTemp creates a new file ".tmp-N" in dir (mode 0600, as os.CreateTemp) and returns
// its descriptor and path.
func rawTemp(dir string) (int, string, error) {
	var fd int
	name, err := tempName(dir, func(name string) error {
		return retry(func() (err error) {
			fd, err = syscall.Open(name, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o600)
			return err
		})
	})
	if err != nil {
		return -1, "", &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return fd, name, nil
}

// tempName makes a file ".tmp-N" in dir with create (which fails with EEXIST if the
// name is taken: another is tried) and returns its name, or create's other error.
func tempName(dir string, create func(name string) error) (string, error) {
	for range 10000 {
		name := filepath.Join(dir, ".tmp-"+strconv.FormatUint(uint64(rand.Uint32()), 10))
		if err := create(name); err != syscall.EEXIST {
			return name, err
		}
	}
	return filepath.Join(dir, ".tmp-*"), fs.ErrExist // every name tried was taken
}

// WriteFD writes all of data to the descriptor fd.
func WriteFD(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := syscall.Write(fd, data)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return io.ErrShortWrite
		}
		data = data[n:]
	}
	return nil
}

// retry runs f again while it is interrupted by a signal.
func retry(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}

func writeWith(path string, perm, dirPerm fs.FileMode, durable bool, fill func(*os.File) error) error {
	f, err := tempBeside(path, dirPerm)
	if err != nil {
		return err
	}
	err = fill(f)
	if err == nil && perm != 0o600 { // CreateTemp makes 0600
		err = f.Chmod(perm)
	}
	if err == nil && durable {
		err = f.Sync()
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

// syncDir fsyncs a directory, so a rename in it survives a power cut. Some platforms and
// file systems cannot (EINVAL, or opening a directory is refused); the data is already
// safe in the file then, so that is not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}

// ErrExists is returned by Create when path already exists.
var ErrExists = fs.ErrExist

// Create writes data to path only if nothing is there yet, atomically and exclusively:
// of concurrent Creates of one path exactly one succeeds, and a reader sees the whole
// file or none. The data is written to a temporary file first and then hard-linked into
// place (link fails if the name exists, where rename would replace it).
func Create(path string, data []byte, perm, dirPerm fs.FileMode) error {
	if done, err := tryUnnamed(path, data, perm, dirPerm, false, true); done {
		return err
	}
	f, err := tempBeside(path, dirPerm)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if err == nil && perm != 0o600 {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(f.Name(), path)
}

// tempBeside makes a temporary file in path's directory (creating the directory with
// dirPerm if need be), so that a rename or link into path stays on one file system.
func tempBeside(path string, dirPerm fs.FileMode) (*os.File, error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-*")
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(dir, dirPerm); err == nil {
			f, err = os.CreateTemp(dir, ".tmp-*")
		}
	}
	return f, err
}
