package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// A job whose output fills the disk must end FAILED, at once and saying why, not hang:
// the call blocks in a pipe write as soon as nothing drains the pipe, so nothing on the
// output path may ever stop reading, and the first ENOSPC stops the job. The final
// records (envelope, status) need a few blocks of their own: a small reserve is taken
// at the start and given back once the job's code has stopped, before those writes (not
// when the disk fills: a job still writing would take the space back at once, and with
// the store and the state directory on one disk even the kept final status could not
// be written).

// reserveSize is what the final writes of a job need at most (status, envelope, a
// last log chunk is dropped).
const reserveSize = 256 << 10

// errNoSpace is the cause a job is stopped with when its output filled the disk.
type errNoSpace struct {
	what string
	err  error
}

func (e *errNoSpace) Error() string {
	return fmt.Sprintf("no space left on device: %s could not be written, so the job was stopped (free space and run it again; the output up to this point is kept)", e.what)
}

func (e *errNoSpace) Unwrap() error { return e.err }

// diskGuard watches the output path for ENOSPC.
type diskGuard struct {
	once    sync.Once
	reserve string
	stop    func(error)
}

// newDiskGuard takes the reserve in dir ("" for none) and calls stop(cause) on the first
// ENOSPC reported to it.
func newDiskGuard(dir string, stop func(error)) *diskGuard {
	g := &diskGuard{stop: stop}
	if dir == "" {
		return g
	}
	p := filepath.Join(dir, ".kinetic-reserve")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return g
	}
	defer f.Close()
	if preallocate(f, reserveSize) != nil {
		os.Remove(p) // no fallocate here (or already no space): go without
		return g
	}
	g.reserve = p
	return g
}

// report stops the job if err is ENOSPC.
func (g *diskGuard) report(what string, err error) {
	if !errors.Is(err, syscall.ENOSPC) {
		return
	}
	g.once.Do(func() { g.stop(&errNoSpace{what: what, err: err}) })
}

// release removes the reserve.
func (g *diskGuard) release() {
	if g.reserve != "" {
		os.Remove(g.reserve)
	}
}

// lenientWriter writes to w until w fails, then drops what follows: a local copy of the
// output that cannot be written must not stop the job's output from being read.
type lenientWriter struct {
	w     io.Writer
	what  string
	guard *diskGuard
	mu    sync.Mutex
	err   error
}

func (l *lenientWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		if _, err := l.w.Write(p); err != nil {
			l.err = err
			l.guard.report(l.what, err)
		}
	}
	return len(p), nil
}
