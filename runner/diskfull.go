package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// A job whose output fills the disk must end FAILED, soon and saying why, not hang: the
// call blocks in a pipe write as soon as nothing drains the pipe, so nothing on the
// output path may ever stop reading, and output that keeps failing with ENOSPC stops
// the job. Not the first failure: a job whose own writes filled the disk (an OSError
// it raises or catches) may print a line or a traceback on its way out, and must end as
// itself, not as a kinetic error. The final
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

// Output lost to a full disk stops the job once it is stopAfterBytes, or goes on
// stopAfter after the first loss: a job printing on and on is stopped within seconds.
const (
	stopAfterBytes = 1 << 20
	stopAfter      = 2 * time.Second
)

// diskGuard watches the output path for ENOSPC.
type diskGuard struct {
	once    sync.Once
	made    chan struct{} // closed once the reserve is taken (or not: reserve "")
	reserve string
	stop    func(error)
	mu      sync.Mutex
	lost    int       // bytes of output dropped
	firstAt time.Time // when the first was
	gone    chan struct{}
	goOnce  sync.Once
}

// newDiskGuard takes the reserve in dir ("" for none) and calls stop(cause) on the first
// ENOSPC reported to it. The reserve is taken beside the job's start, not before it
// (allocating it and giving it back were 1.5 ms of a 25 ms call on this machine): it is
// for the final writes.
func newDiskGuard(dir string, stop func(error)) *diskGuard {
	g := &diskGuard{stop: stop, made: make(chan struct{}), gone: make(chan struct{})}
	if dir == "" {
		close(g.made)
		return g
	}
	go func() {
		defer close(g.made)
		p := filepath.Join(dir, ".kinetic-reserve")
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return
		}
		defer f.Close()
		if preallocate(f, reserveSize) != nil {
			os.Remove(p) // no fallocate here (or already no space): go without
			return
		}
		g.reserve = p
	}()
	return g
}

// release gives the reserve back, in the background; the channel is closed once it is
// back. The final writes do not wait for it unless one of them finds the disk full
// (writeFinal), so a call's end does not wait for the file system.
func (g *diskGuard) release() <-chan struct{} {
	g.goOnce.Do(func() {
		go func() {
			defer close(g.gone)
			<-g.made
			if g.reserve != "" {
				os.Remove(g.reserve)
			}
		}()
	})
	return g.gone
}

// writeFinal runs write, one of the job's final writes; if it finds no space, it runs
// it again once the reserve is back.
func (g *diskGuard) writeFinal(write func() error) error {
	err := write()
	if errors.Is(err, syscall.ENOSPC) {
		<-g.release()
		err = write()
	}
	return err
}

// report hears that n bytes of output were dropped because of err, and stops the job
// when err is ENOSPC and enough was lost (stopAfterBytes, stopAfter).
func (g *diskGuard) report(what string, err error, n int) {
	if !errors.Is(err, syscall.ENOSPC) {
		return
	}
	g.mu.Lock()
	if g.firstAt.IsZero() {
		g.firstAt = time.Now()
	}
	g.lost += n
	over := g.lost >= stopAfterBytes || time.Since(g.firstAt) >= stopAfter
	g.mu.Unlock()
	if over {
		g.once.Do(func() { g.stop(&errNoSpace{what: what, err: err}) })
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
		}
	}
	if l.err != nil {
		l.guard.report(l.what, l.err, len(p))
	}
	return len(p), nil
}

// noSpaceForValue is the failure of a call whose return value (size bytes pickled) the
// bootstrap could not write to outDir, its disk full: naming the store when that disk is
// the store's too (a file:// store beside the state directory), as a full store is named.
func noSpaceForValue(o Options, outDir string, size int64) error {
	where := "the job's workspace " + outDir
	if o.Store != nil && o.Store.LocalDir() != "" && sameDisk(o.Store.LocalDir(), outDir) {
		where = "the store " + o.Store.URL() + " (the disk it shares with the job's workspace)"
	}
	return fmt.Errorf("no space left on device in %s: the function's return value (%d bytes pickled) could not be written there, so the job failed (free space there and run it again)", where, size)
}

// sameDisk reports whether paths a and b are on one file system.
func sameDisk(a, b string) bool {
	var sa, sb syscall.Stat_t
	return syscall.Stat(a, &sa) == nil && syscall.Stat(b, &sb) == nil && sa.Dev == sb.Dev
}
