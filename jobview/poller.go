package jobview

import (
	"context"
	"time"

	"github.com/kinetic-run/kinetic/internal/dirwatch"
)

// Poller yields growing delays: every few milliseconds for the first seconds, so short
// jobs return quickly (a status check of a local job costs a file read), then slower, so
// long waits cost little.
type Poller struct {
	start time.Time
	d     time.Duration
}

// NewPoller returns a poller whose first delay is 2 ms.
func NewPoller() *Poller { return NewPollerFrom(2 * time.Millisecond) }

// NewPollerFrom returns a poller whose first delay is d (a loop that just made progress
// looks again soon, but not at once).
func NewPollerFrom(d time.Duration) *Poller { return &Poller{start: time.Now(), d: d} }

// Wait sleeps for the next delay, or until ctx ends (its error).
func (p *Poller) Wait(ctx context.Context) error { return p.wait(ctx, nil) }

// Sleeper is what waits between polls: a *dirwatch.Watcher, or a backend's watch of
// what it runs (driver.GroupWatch).
type Sleeper interface {
	Sleep(ctx context.Context, d time.Duration) error
}

// WaitWatched is Wait that also ends when w sees a change: the delays grow faster, since
// w wakes the loop when something is written, and the polls are only for what writes
// nothing.
func (p *Poller) WaitWatched(ctx context.Context, w Sleeper) error { return p.wait(ctx, w) }

// wait sleeps for the next delay, until w (if not nil) sees a change, or until ctx ends.
func (p *Poller) wait(ctx context.Context, w Sleeper) error {
	if dw, ok := w.(*dirwatch.Watcher); ok && dw == nil {
		w = nil // no watcher (none could be made): a poll alone
	}
	d := p.d
	limit := 20 * time.Millisecond
	if time.Since(p.start) > 3*time.Second {
		limit = 500 * time.Millisecond
	}
	if w != nil {
		limit = max(limit, 100*time.Millisecond)
		p.d = min(p.d*2+time.Millisecond, limit)
	} else {
		p.d = min(p.d*5/4+time.Millisecond, limit)
	}
	if w == nil {
		return (*dirwatch.Watcher)(nil).Sleep(ctx, d)
	}
	return w.Sleep(ctx, d)
}
