// Package dirwatch wakes a waiting loop when something is added to a directory, so that
// loops which look for a file another process writes (a job's status, a queue's next
// entry) sleep until it comes instead of polling every few milliseconds. On Linux it is
// inotify; elsewhere, or when the directory cannot be watched, a Watcher never wakes
// early and the loops poll as before. Events are only hints: a caller always looks at
// the directory itself, and still looks now and then without one.
package dirwatch

import (
	"context"
	"os"
	"sync/atomic"
	"time"
)

// Watcher reports additions to one directory. The nil *Watcher is valid: it never wakes.
type Watcher struct {
	c    chan struct{}
	stop func()
	// rearm, for a watch of writes, watches again after a wake: it fires once per arming
	// (IN_ONESHOT), not once per line another process appends (a thousand wake-ups of
	// this process, and as many of the writer's, for a thousand-input map).
	rearm func()
	fired atomic.Bool
}

// MaxWatchers bounds the watchers a process holds at once: inotify instances are a
// per-user resource of the machine (128 by default), not to be used up by one process
// waiting for many jobs. Beyond it New returns the nil Watcher (the caller polls).
const MaxWatchers = 32

var live atomic.Int32

// New watches dir for entries made, written or moved in. A directory that cannot be
// watched gives a Watcher that never wakes early (and no error: callers poll anyway).
func New(dir string) *Watcher { return NewFor(dir) }

// NewFor is New for a caller that looks for the entries named names only: the others
// made in dir (temporary files, other jobs' results) do not wake it. A loop waiting for
// one job's end in a directory where hundreds of its siblings end would otherwise wake,
// and read, for each of them.
func NewFor(dir string, names ...string) *Watcher { return newWatcher(dir, false, names) }

// NewWrites is New that also wakes when a file in dir is written to, closed or not: for
// a loop that waits for a line appended to a log another process keeps open.
func NewWrites(dir string) *Watcher { return newWatcher(dir, true, nil) }

// Exists reports whether dir is a directory (one stat).
func Exists(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

func newWatcher(dir string, writes bool, names []string) *Watcher {
	var set map[string]bool
	if len(names) > 0 {
		set = make(map[string]bool, len(names))
		for _, n := range names {
			set[n] = true
		}
	}
	if live.Add(1) > MaxWatchers {
		live.Add(-1)
		return nil
	}
	w := &Watcher{c: make(chan struct{}, 1)}
	stop, rearm, ok := watch(dir, set, writes, func() {
		w.fired.Store(true)
		select {
		case w.c <- struct{}{}:
		default: // a wake-up is pending already
		}
	})
	if !ok {
		live.Add(-1)
		return nil
	}
	w.stop, w.rearm = stop, rearm
	return w
}

// Close stops watching, without waiting for it: closing an inotify instance waits for
// the kernel (an SRCU grace period, 6–17 ms on this project's machine), which was on
// every call's path, between the job's end and its result. The instance counts against
// MaxWatchers until it is closed. A Watcher is closed once.
func (w *Watcher) Close() {
	if w != nil && w.stop != nil {
		stop := w.stop
		w.stop = nil
		go func() {
			stop()
			live.Add(-1)
		}()
	}
}

// Sleep waits for d, for an addition to the directory since the last Sleep, or for ctx
// to end (its error).
func (w *Watcher) Sleep(ctx context.Context, d time.Duration) error {
	var c chan struct{}
	if w != nil {
		c = w.c
		if w.rearm != nil && w.fired.Swap(false) {
			// It fired since the last Sleep and watched nothing since: what came after
			// is unseen. Watch again, and look now.
			w.rearm()
			select {
			case <-c:
			default:
			}
			return ctx.Err()
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	case <-c:
		if w.rearm != nil && w.fired.Swap(false) {
			w.rearm() // before the caller looks: what comes after it wakes the next Sleep
		}
	}
	return nil
}
