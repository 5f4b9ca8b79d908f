package engine

import (
	"context"
	"sync"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Unwritten finds jobs that exist though the store holds no handle of theirs: the
// children of a batch its backend runs as one unit, made from the batch's template
// until their pods write them (package batch implements it and registers it when it
// is linked). The engine knows nothing of batches: Attach and the tombstone reads ask
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
}

var (
	unwrittenMu sync.RWMutex
	unwritten   Unwritten
)

// RegisterUnwritten makes u the finder of unwritten jobs (package batch calls it from
// its init, the way backends register themselves).
func RegisterUnwritten(u Unwritten) {
	unwrittenMu.Lock()
	defer unwrittenMu.Unlock()
	unwritten = u
}

func unwrittenHandle(ctx context.Context, st *store.Store, id string) (*job.Handle, error) {
	unwrittenMu.RLock()
	u := unwritten
	unwrittenMu.RUnlock()
	if u == nil {
		return nil, nil
	}
	return u.Handle(ctx, st, id)
}

func unwrittenTombstone(ctx context.Context, st *store.Store, id string) (*job.Tombstone, error) {
	unwrittenMu.RLock()
	u := unwritten
	unwrittenMu.RUnlock()
	if u == nil {
		return nil, nil
	}
	return u.Tombstone(ctx, st, id)
}
