package batch

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
)

// Collect records, before a reply, that the results of jobs were collected: a
// tombstone per job, and for batch children a collection record in their batch. It
// returns the jobs to clean up after the reply; a job whose tombstone could not be
// written is kept whole (and said so), for a cleanup without it would leave "no job".
// Anything the caller does after the reply (logs(), `kinetic jobs status`) then finds
// the tombstone, so a read racing the cleanup says "removed by cleanup", never less.
func Collect(ctx context.Context, jobs []*engine.Job) []*engine.Job {
	out := make([]*engine.Job, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, j := range jobs {
		if _, _, ok := job.ParseChildID(j.Handle.JobID); ok {
			out[i] = j // a derived child: its batch's record below is its tombstone
			continue
		}
		g.Go(func() error {
			if _, err := j.MarkCollected(gctx); err != nil {
				fmt.Fprintf(os.Stderr, "kinetic: warning: %v; the job is kept (`kinetic jobs cleanup %s` removes it)\n", err, j.Handle.JobID)
				return nil
			}
			out[i] = j
			return nil
		})
	}
	g.Wait()
	var kept []*engine.Job
	groups := map[string][]layout.Collected{}
	stores := map[string]*engine.Job{}
	now := time.Now().UTC()
	for _, j := range out {
		if j == nil {
			continue
		}
		kept = append(kept, j)
		if gid := j.Handle.GroupID; gid != "" {
			groups[gid] = append(groups[gid], layout.Collected{JobID: j.Handle.JobID, Index: j.Handle.GroupIndex, CollectedAt: now})
			stores[gid] = j
		}
	}
	unrecorded := map[string]bool{}
	for gid, cs := range groups {
		if err := layout.RecordCollected(ctx, stores[gid].Store, gid, cs); err != nil {
			fmt.Fprintf(os.Stderr, "kinetic: warning: could not record in batch %s that %d results were collected: %v; its derived children are kept\n", gid, len(cs), err)
			unrecorded[gid] = true
		}
	}
	if len(unrecorded) > 0 {
		// A derived child with no record would be "no job" once removed: keep it.
		ok := kept[:0]
		for _, j := range kept {
			if _, _, derived := job.ParseChildID(j.Handle.JobID); !derived || !unrecorded[j.Handle.GroupID] {
				ok = append(ok, j)
			}
		}
		kept = ok
	}
	return kept
}
