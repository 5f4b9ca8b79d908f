package engine

import (
	"context"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Unwritten finds jobs that exist though the store holds no handle of theirs: the
// children of a batch its backend runs as one unit, made from the batch's template
// until their pods write them (package batch implements it: batch.Unwritten, given to
// New with WithUnwritten). The engine knows nothing of batches: Attach and the tombstone reads ask
// it when a job's own objects are missing.
//
// Implementations must answer nil, nil for an ID that is not theirs, read no more than
// a few objects per call, and be safe for concurrent use.
type Unwritten interface {
	// Handle is the handle of job id as made by its batch (nil when id is not such a
	// job, or it was removed or collected).
	Handle(ctx context.Context, st *store.Store, id string) (*job.Handle, error)
	// Tombstone is the tombstone of job id recorded by its batch when its result was
	// collected (nil when there is none).
	Tombstone(ctx context.Context, st *store.Store, id string) (*job.Tombstone, error)
	// Templates are the specs of the batches in st whose jobs are made from a template
	// rather than written one by one: what they use, prune keeps.
	Templates(ctx context.Context, st *store.Store) ([]*job.Spec, error)
}

// Option sets up an engine as New makes it.
type Option func(*Engine)

// WithUnwritten makes u the engine's finder of unwritten jobs. Whoever links package
// batch passes it where the program makes its engine (batch.Unwritten: the CLI, the
// server's tests, the benchmarks); an engine made without it finds no derived batch
// child, only jobs whose handle is in the store.
func WithUnwritten(u Unwritten) Option {
	return func(e *Engine) { e.unwritten = u }
}

func (e *Engine) unwrittenHandle(ctx context.Context, st *store.Store, id string) (*job.Handle, error) {
	if e.unwritten == nil {
		return nil, nil
	}
	return e.unwritten.Handle(ctx, st, id)
}
