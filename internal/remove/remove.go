// Package remove removes files and directory trees that are usually absent or empty in
// as few system calls as the answer needs.
//
// Why: a local batch's cleanup removes, for each of its thousands of inputs, objects
// most inputs never wrote (a log, a large value, a workspace). os.Remove tries unlink
// and then rmdir, and os.RemoveAll starts with os.Remove and then an lstat: two or three
// failing path lookups for a path that does not exist, per object, per input
// (docs/benchmarks.md, "Tenth round").
package remove

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/backoff"
)

// File removes the file at path, one system call whether or not it existed, and says
// whether it did (an absent one is no error). An empty directory is removed as
// os.Remove would.
func File(path string) (removed bool, err error) {
	err = unlink(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case errors.Is(err, errIsDir):
		if err := os.Remove(path); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, &fs.PathError{Op: "remove", Path: path, Err: err}
}

// All removes path and what it holds, as os.RemoveAll does (nil if it did not exist),
// trying first to remove it as an empty directory: one system call when it is absent
// or an empty directory.
func All(path string) error {
	err := rmdir(path)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return os.RemoveAll(path)
}

// ErrStillWritten is returned by AllWhileWritten when files kept appearing in the tree
// for the whole time it was given.
var ErrStillWritten = errs.New(errs.Unavailable, "still being written")

// AllWhileWritten is All for a tree someone may still be writing into for a moment (a
// supervisor's last writes after its job was judged ended: a file made while RemoveAll
// runs fails it with ENOTEMPTY): it tries again, backing off, for up to within. It
// returns an error wrapping ErrStillWritten if files kept appearing all that time.
func AllWhileWritten(ctx context.Context, path string, within time.Duration) error {
	err := All(path)
	if !errors.Is(err, syscall.ENOTEMPTY) {
		return err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), within)
	defer cancel()
	err = backoff.Retry(wctx, backoff.New(5*time.Millisecond, 200*time.Millisecond), func() (bool, error) {
		if err := os.RemoveAll(path); !errors.Is(err, syscall.ENOTEMPTY) {
			return true, err
		}
		return false, nil // made meanwhile: again
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return &fs.PathError{Op: "remove", Path: path, Err: ErrStillWritten}
	}
	return err
}
