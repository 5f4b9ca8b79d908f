package batch

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
)

// Collect claims, for the collector by names, the results of jobs that it has received
// (the SDK acknowledged them): a tombstone per job, written only if none is there, and
// for batch children a collection record in their batch. It returns the jobs this call
// claimed, to clean up after the reply, and the tombstones of those another collector
// claimed first (who and when), which this call leaves alone: of concurrent collectors
// exactly one cleans a job up. A job whose claim could not be written is kept whole (and
// said so), for a cleanup without it would leave "no job". Anything the caller does
// after the reply (logs(), `kinetic jobs status`) then finds the tombstone, so a read
// racing the cleanup says "removed by cleanup", never less.
func Collect(ctx context.Context, jobs []*engine.Job, by string) (mine []*engine.Job, taken []*job.Tombstone) {
	claimed := make([]*engine.Job, len(jobs))
	others := make([]*job.Tombstone, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, j := range jobs {
		if _, _, ok := job.ParseChildID(j.Handle.JobID); ok {
			claimed[i] = j // a derived child: its batch's record below is its claim
			continue
		}
		g.Go(func() error {
			t, won, err := j.MarkCollected(gctx, by)
			switch {
			case err != nil:
				fmt.Fprintf(os.Stderr, "kinetic: warning: %v; the job is kept (`kinetic jobs cleanup %s` removes it)\n", err, j.Handle.JobID)
			case won:
				claimed[i] = j
			default:
				others[i] = t
			}
			return nil
		})
	}
	g.Wait()
	for _, t := range others {
		if t != nil {
			taken = append(taken, t)
		}
	}
	groups := map[string][]*engine.Job{}
	for _, j := range claimed {
		if j == nil {
			continue
		}
		if gid := j.Handle.GroupID; gid != "" {
			groups[gid] = append(groups[gid], j)
		} else {
			mine = append(mine, j)
		}
	}
	for gid, js := range groups {
		m, t := recordCollected(ctx, gid, js, by)
		mine, taken = append(mine, m...), append(taken, t...)
	}
	return mine, taken
}

// recordCollected writes one collection record of batch gid for its children js and
// returns those this collection claimed (for a derived child, its batch's first record
// that lists it: layout.ClaimedBy) and the tombstones of those another claimed first.
func recordCollected(ctx context.Context, gid string, js []*engine.Job, by string) (mine []*engine.Job, taken []*job.Tombstone) {
	st := js[0].Store
	now := time.Now().UTC()
	cs := make([]layout.Collected, len(js))
	for i, j := range js {
		cs[i] = layout.Collected{JobID: j.Handle.JobID, Index: j.Handle.GroupIndex, CollectedAt: now, CollectedBy: by}
	}
	key, err := layout.RecordCollected(ctx, st, gid, cs)
	var claims map[string]bool
	if err == nil {
		claims, err = layout.ClaimedBy(ctx, st, gid, key, cs)
	}
	for _, j := range js {
		_, _, derived := job.ParseChildID(j.Handle.JobID)
		switch {
		case !derived:
			mine = append(mine, j) // its own tombstone claimed it; the record is for listings
		case err != nil:
			// A derived child with no record would be "no job" once removed: keep it.
		case claims[j.Handle.JobID]:
			mine = append(mine, j)
		default:
			if t, terr := j.Collected(ctx); terr == nil && t != nil {
				taken = append(taken, t)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kinetic: warning: could not record in batch %s that %d results were collected: %v; its derived children are kept\n", gid, len(js), err)
	}
	return mine, taken
}

// Collections answers, for the children of batches, whether their result was collected
// already, reading each batch's collection records once (a batch's results() reads
// every child: one listing, not a lookup per child).
type Collections struct {
	mu sync.Mutex
	by map[string]*collections // store URL + "\x00" + batch ID
}

type collections struct {
	once sync.Once
	recs map[string]layout.Collected
	err  error
}

// Of returns the tombstone of j if j is a batch child whose result a collection record
// of its batch lists, nil otherwise (or when the records cannot be read: the read of
// the result itself says what is wrong then).
func (c *Collections) Of(ctx context.Context, j *engine.Job) *job.Tombstone {
	gid := j.Handle.GroupID
	if gid == "" {
		return nil
	}
	key := j.Store.URL() + "\x00" + gid
	c.mu.Lock()
	if c.by == nil {
		c.by = map[string]*collections{}
	}
	g := c.by[key]
	if g == nil {
		g = &collections{}
		c.by[key] = g
	}
	c.mu.Unlock()
	g.once.Do(func() { g.recs, g.err = layout.ReadCollected(ctx, j.Store, gid) })
	rec, ok := g.recs[j.Handle.JobID]
	if g.err != nil || !ok {
		return nil
	}
	t := job.NewTombstone(j.Handle, rec.CollectedAt, rec.CollectedAt)
	t.CollectedBy = rec.CollectedBy
	return t
}
