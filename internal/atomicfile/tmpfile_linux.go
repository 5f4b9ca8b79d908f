package atomicfile

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// procFD is where a descriptor has a name linkat can follow without privileges (open(2),
// O_TMPFILE).
const procFD = "/proc/self/fd/"

// openUnnamed opens a new file in dir that has no name yet (O_TMPFILE): nothing is added
// to the directory until linkUnnamed gives it one, which is half the directory updates of
// a named temporary file and a rename (the cost of a small write on ext4: 90 against 175
// µs, docs/benchmarks.md). ok is false when the file system cannot; err is set when it
// could but failed (ENOENT: dir is missing).
func openUnnamed(dir string) (fd int, ok bool, err error) {
	if noTmpfile.Load() {
		return -1, false, nil
	}
	err = retry(func() (err error) {
		fd, err = unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		return err
	})
	switch err {
	case nil:
		return fd, true, nil
	case syscall.ENOENT:
		return -1, true, err
	case syscall.EOPNOTSUPP, syscall.EISDIR, syscall.EINVAL:
		noTmpfile.Store(true)
	}
	return -1, false, nil // anything else: the named temporary file says what is wrong
}

// linkUnnamed gives the unnamed file fd the name path; it fails with EEXIST if path
// exists, as link(2) does.
func linkUnnamed(fd int, path string) error {
	return retry(func() error {
		return unix.Linkat(unix.AT_FDCWD, procFD+strconv.Itoa(fd), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	})
}
