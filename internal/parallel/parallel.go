// Package parallel calls a function for each index of a range from a fixed number of
// goroutines.
//
// Why not errgroup's Go per item: a goroutine per item starts on a small stack and
// grows it by copying for every item (a store read or a removal is a deep call), and is
// created and scheduled for every item. On a local store, where each item costs a few
// microseconds, that was a tenth of the engine's CPU for a 1,000-input map (stack
// copies, goroutine starts; docs/benchmarks.md, "Tenth round"). Here each goroutine
// grows its stack once and takes items until none is left, and a range of one item, or a
// limit of one, runs in the caller's goroutine.
package parallel

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// ForEach calls f(ctx, i) for every i in [0, n), from at most limit goroutines (at
// least one), and returns the first error. As with errgroup.WithContext, the context
// given to f is cancelled once a call fails (or ctx is), and no further call starts
// then; calls under way finish.
func ForEach(ctx context.Context, n, limit int, f func(ctx context.Context, i int) error) error {
	if n <= 0 {
		return nil
	}
	if limit < 1 {
		limit = 1
	}
	if n == 1 || limit == 1 {
		for i := 0; i < n; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := f(ctx, i); err != nil {
				return err
			}
		}
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for w := 0; w < min(limit, n); w++ {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return nil
				}
				if err := gctx.Err(); err != nil {
					return err
				}
				if err := f(gctx, i); err != nil {
					return err
				}
			}
		})
	}
	return g.Wait()
}
