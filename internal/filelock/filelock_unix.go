//go:build unix

// Package filelock is the module's one advisory file lock (flock): the local backend's
// supervisor, slot, pool and queue locks, the environment and warm-worker build locks,
// the image build locks, the profiles file, and the test helpers that build tools into
// a shared cache or run the one test cluster a machine has. flock locks belong to the
// open file description, so two opens in one process exclude each other as two processes
// do, and a lock dies with its process: a crash cannot leave one held.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kinetic-run/kinetic/errs"
	"github.com/kinetic-run/kinetic/internal/backoff"
)

// Mode is the kind of lock: Exclusive (one holder) or Shared (many, none exclusive).
type Mode int

const (
	Exclusive Mode = iota
	Shared
)

func (m Mode) op() int {
	if m == Shared {
		return unix.LOCK_SH
	}
	return unix.LOCK_EX
}

// ErrLocked is returned by Try when another open file holds a conflicting lock.
var ErrLocked = errs.New(errs.Unavailable, "locked by another process")

// ErrUnsupported wraps the error of a file system that has no flock (some network
// mounts); callers that can live without the lock test for it.
var ErrUnsupported = errs.New(errs.FailedPrecondition, "file locks are not supported here")

// Open opens path with flag (O_CLOEXEC added, so no child inherits the lock) and perm.
// It calls open(2) directly: lock and state files are opened many times a second by
// status checks, and os.OpenFile would also try to register each with the runtime poller.
func Open(path string, flag int, perm uint32) (*os.File, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, perm)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}

// Try takes m on f without waiting; ErrLocked if another holds a conflicting lock.
func Try(f *os.File, m Mode) error {
	for {
		err := unix.Flock(int(f.Fd()), m.op()|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return ErrLocked
		}
		return wrap(f, err)
	}
}

// Wait takes m on f, blocking until it is free.
func Wait(f *os.File, m Mode) error {
	for {
		err := unix.Flock(int(f.Fd()), m.op())
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINTR) {
			return wrap(f, err)
		}
	}
}

// WaitContext takes m on f, polling with a backoff so that ctx can end the wait (its
// error is returned then). onWait, if not nil, is called once, before the first wait,
// so a caller can say what it waits for.
func WaitContext(ctx context.Context, f *os.File, m Mode, onWait func()) error {
	b := backoff.New(time.Millisecond, 50*time.Millisecond)
	for {
		err := Try(f, m)
		if !errors.Is(err, ErrLocked) {
			return err
		}
		if onWait != nil {
			onWait()
			onWait = nil
		}
		if err := b.Wait(ctx); err != nil {
			return err
		}
	}
}

// Unlock releases f's lock (closing f releases it too).
func Unlock(f *os.File) { unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// Held reports whether another open file holds an exclusive lock on path, by trying a
// shared lock and letting it go at once. A missing file is an error (fs.ErrNotExist):
// what that means is the caller's to say.
func Held(path string) (bool, error) {
	f, err := Open(path, os.O_RDONLY, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	switch err := Try(f, Shared); {
	case errors.Is(err, ErrLocked):
		return true, nil
	case err != nil:
		return false, err
	}
	return false, nil
}

// Lock opens path (creating it, 0600, and its directory, 0700) and takes an exclusive
// lock, waiting for it. The lock is released by the returned function, or when the
// process exits.
func Lock(path string) (unlock func(), err error) {
	return LockContext(context.Background(), path, nil)
}

// LockContext is Lock with a wait that ctx can end; onWait is as for WaitContext.
func LockContext(ctx context.Context, path string, onWait func()) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := Open(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if ctx == context.Background() && onWait == nil {
		err = Wait(f, Exclusive)
	} else {
		err = WaitContext(ctx, f, Exclusive, onWait)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { Unlock(f); f.Close() }, nil
}

func wrap(f *os.File, err error) error {
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.ENOLCK) || errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("lock %s: %w (%v)", f.Name(), ErrUnsupported, err)
	}
	return fmt.Errorf("lock %s: %w", f.Name(), err)
}
