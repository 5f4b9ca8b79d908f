// Package backoff paces retries and polls: delays that double from a minimum to a
// maximum, a Wait that ends early with its context, and Retry for "try until it works or
// the context ends". It is the one backoff loop of the module: file locks, the local
// backend's queue workers and supervisors, batch saves and the CLI's watches use it.
package backoff

import (
	"context"
	"time"
)

// Backoff yields delays Min, 2·Min, 4·Min … up to Max. The zero value starts at 1 ms and
// stops growing at 1 s. It is not safe for concurrent use.
type Backoff struct {
	Min, Max time.Duration
	next     time.Duration
}

// New returns a Backoff from min to max.
func New(min, max time.Duration) *Backoff { return &Backoff{Min: min, Max: max} }

// Next returns the next delay and doubles the one after it.
func (b *Backoff) Next() time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = time.Millisecond
	}
	if hi <= 0 {
		hi = time.Second
	}
	if b.next < lo {
		b.next = lo
	}
	d := min(b.next, hi)
	b.next = min(2*d, hi)
	return d
}

// Reset starts again from Min: call it after progress, so the next wait is short.
func (b *Backoff) Reset() { b.next = 0 }

// Wait sleeps for the next delay, or returns ctx's error if ctx ends first.
func (b *Backoff) Wait(ctx context.Context) error {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retry calls try until it reports done or fails, waiting b's delays in between. It
// returns try's error, or ctx's error if ctx ends while waiting.
func Retry(ctx context.Context, b *Backoff, try func() (done bool, err error)) error {
	for {
		done, err := try()
		if done || err != nil {
			return err
		}
		if err := b.Wait(ctx); err != nil {
			return err
		}
	}
}
