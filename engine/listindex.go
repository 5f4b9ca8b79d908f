package engine

import (
	"context"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine/listindex"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// The listing index (package listindex) caches the rows of final jobs and the
// tombstones; row and indexed convert between its rows and Listed.

// row is the indexed row of job id, if the index holds one that still stands (its
// status.json unchanged since: Index.Current).
func row(st *store.Store, idx *listindex.Index, id string) (Listed, bool) {
	r, ok := idx.Row(id)
	if ok && !idx.Current(st, id, r) {
		return Listed{}, false
	}
	return Listed{Handle: r.Handle, State: r.State, Reason: r.Reason, FinishedAt: r.FinishedAt, stamp: r.Status}, ok
}

// indexed is l as the index keeps it.
func indexed(l Listed) listindex.Row {
	return listindex.Row{Handle: l.Handle, State: l.State, Reason: l.Reason, FinishedAt: l.FinishedAt, Status: l.stamp}
}

// readRow is j's row read from its backend and, once final, when it ended (its
// status.json); final says the row may be indexed.
func readRow(ctx context.Context, st *store.Store, idx *listindex.Index, j *Job) (l Listed, final bool, err error) {
	stamp := idx.StatusStamp(st, j.Handle.JobID)
	state, reason, err := j.Status(ctx)
	if err != nil {
		return Listed{Handle: j.Handle}, false, err
	}
	l = Listed{Handle: j.Handle, State: state, Reason: reason, stamp: stamp}
	if !state.Terminal() {
		return l, false, nil
	}
	l.FinishedAt = jobview.FinishedAt(ctx, st, j.Handle.JobID, state)
	return l, true, nil
}

// Rows returns the row of each job of ids, in order, the way a listing reads it: a
// final job from the listing index, any other from its handle (and, withStatus, its
// status). A job not in the store has State NOT_FOUND, no Handle, and its Err (a
// CleanedUpError with its tombstone when it was collected). One listing of jobs/ and one
// index read instead of two reads per job (package batch reads its children so).
func (e *Engine) Rows(ctx context.Context, storeURL string, ids []string, withStatus bool) ([]Row, error) {
	if storeURL == "" {
		storeURL = e.cfg.Get(config.Store)
	}
	st, err := e.Store(ctx, storeURL)
	if err != nil {
		return nil, err
	}
	idx := listindex.Read(ctx, st)
	idx.Look(ctx, st)
	listed, err := st.ListDirs(ctx, "jobs/")
	if err != nil {
		return nil, err
	}
	present := make(map[string]bool, len(listed))
	for _, id := range listed {
		present[id] = true
	}
	out := make([]Row, len(ids))
	final := make([]bool, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, id := range ids {
		if r, ok := row(st, idx, id); ok && present[id] {
			out[i] = Row{Listed: r}
			continue
		}
		if t, ok := idx.Tombstones[id]; ok && !present[id] {
			out[i] = Row{Listed: Listed{State: job.NotFound}, Err: &CleanedUpError{Tombstone: t}}
			continue
		}
		g.Go(func() error {
			j, err := e.Attach(gctx, id, storeURL)
			if err != nil {
				out[i] = Row{Listed: Listed{State: job.NotFound}, Err: err}
				return nil
			}
			out[i].Handle = j.Handle
			if !withStatus {
				return nil
			}
			out[i].Listed, final[i], err = readRow(gctx, st, idx, j)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// The index keeps its rows of jobs still in the store, and gains the new final ones.
	seen := make(map[string]listindex.Row, len(idx.Jobs))
	for id, r := range idx.Jobs {
		if present[id] && idx.Current(st, id, r) {
			seen[id] = r
		}
	}
	for i, r := range out {
		if final[i] {
			seen[ids[i]] = indexed(r.Listed)
		}
	}
	listindex.Update(ctx, st, idx, seen, idx.Tombstones, idx.TombstoneSizes)
	return out, nil
}

// Row is one job as Rows reads it.
type Row struct {
	Listed
	// Err is why a job has no handle (a store not-found error, or a CleanedUpError).
	Err error
}
