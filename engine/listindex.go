package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// The listing index (store.ListIndexKey) caches what a listing read about jobs that can
// no longer change: the handle, final state, reason and end of every final job, and every
// tombstone. A listing of 10,000 final jobs then reads one object instead of 20,000.
//
// It is a cache, never the truth. A listing still lists jobs/ (and tombstones/), takes a
// row from the index only for a job listed there, reads every other job from its own
// objects, and drops rows of jobs that are gone. Only final rows are cached, and a final
// job's handle, state and end never change (its objects may only be deleted), so an index
// that is stale, lost, damaged, or written by two listers at once (the last write wins;
// each holds only true rows) costs reads, never a wrong row. The index is one object,
// written whole by one Put: a crash while writing it leaves the old one or the new one.

// indexVersion changes when the index's shape does; an index of another version is
// ignored (and rewritten by the next listing that finds something to add).
const indexVersion = 1

type listIndex struct {
	Version    int                       `json:"version"`
	Jobs       map[string]indexedJob     `json:"jobs"`
	Tombstones map[string]*job.Tombstone `json:"tombstones"`
}

type indexedJob struct {
	Handle     *job.Handle `json:"handle"`
	State      job.State   `json:"state"`
	Reason     string      `json:"reason,omitempty"`
	FinishedAt time.Time   `json:"finished_at,omitzero"`
}

// row is the indexed row of job id, if the index holds one.
func (idx *listIndex) row(id string) (Listed, bool) {
	r, ok := idx.Jobs[id]
	if !ok || r.Handle == nil || r.Handle.JobID != id {
		return Listed{}, false
	}
	return Listed{Handle: r.Handle, State: r.State, Reason: r.Reason, FinishedAt: r.FinishedAt}, true
}

// indexed is l as the index keeps it.
func indexed(l Listed) indexedJob {
	return indexedJob{Handle: l.Handle, State: l.State, Reason: l.Reason, FinishedAt: l.FinishedAt}
}

// readRow is j's row read from its backend and, once final, when it ended (its
// status.json); final says the row may be indexed.
func readRow(ctx context.Context, st *store.Store, j *Job) (l Listed, final bool, err error) {
	state, reason, err := j.Status(ctx)
	if err != nil {
		return Listed{Handle: j.Handle}, false, err
	}
	l = Listed{Handle: j.Handle, State: state, Reason: reason}
	if !state.Terminal() {
		return l, false, nil
	}
	if s, err := jobview.ReadStatus(ctx, st, j.Handle.JobID); err == nil && s.State == state {
		l.FinishedAt = s.UpdatedAt
	} else if raw, err := st.Get(ctx, store.EnvelopeKey(j.Handle.JobID)); err == nil {
		// No status.json (a batch input run by an executor): its envelope says when.
		if env, err := job.DecodeEnvelope(raw); err == nil && !env.FinishedAt.IsZero() {
			l.FinishedAt = env.FinishedAt
		}
	}
	return l, true, nil
}

// readIndex returns the store's listing index, or an empty one when there is none or it
// cannot be read or decoded (it is only a cache).
func readIndex(ctx context.Context, st *store.Store) *listIndex {
	idx := &listIndex{Version: indexVersion, Jobs: map[string]indexedJob{}, Tombstones: map[string]*job.Tombstone{}}
	raw, err := st.Get(ctx, store.ListIndexKey)
	if err != nil {
		if !store.IsNotFound(err) {
			slog.Debug("listing index unreadable; listing without it", "err", err)
		}
		return idx
	}
	var got listIndex
	if err := json.Unmarshal(raw, &got); err != nil || got.Version != indexVersion {
		slog.Debug("listing index of another version or damaged; listing without it", "err", err, "version", got.Version)
		return idx
	}
	if got.Jobs != nil {
		idx.Jobs = got.Jobs
	}
	if got.Tombstones != nil {
		idx.Tombstones = got.Tombstones
	}
	return idx
}

// writeIndex stores idx. A failure (a read-only store, a full disk) is not the listing's:
// the next listing reads the jobs themselves again.
func writeIndex(ctx context.Context, st *store.Store, idx *listIndex) {
	b, err := json.Marshal(idx)
	if err == nil {
		err = st.Put(ctx, store.ListIndexKey, b)
	}
	if err != nil {
		slog.Debug("listing index not written", "err", err)
	}
}

// updateIndex merges a listing into the index and writes it when anything changed.
// seenJobs are the final rows of this listing (cached or newly read), seenTombs the
// tombstones listed; rows of anything else are dropped.
func updateIndex(ctx context.Context, st *store.Store, old *listIndex, seenJobs map[string]indexedJob, seenTombs map[string]*job.Tombstone) {
	changed := len(seenJobs) != len(old.Jobs) || len(seenTombs) != len(old.Tombstones)
	if !changed {
		for id := range seenJobs {
			if _, ok := old.Jobs[id]; !ok {
				changed = true
				break
			}
		}
	}
	if !changed {
		for id := range seenTombs {
			if _, ok := old.Tombstones[id]; !ok {
				changed = true
				break
			}
		}
	}
	if !changed {
		return
	}
	writeIndex(ctx, st, &listIndex{Version: indexVersion, Jobs: seenJobs, Tombstones: seenTombs})
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
	idx := readIndex(ctx, st)
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
		if r, ok := idx.row(id); ok && present[id] {
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
			out[i].Listed, final[i], err = readRow(gctx, st, j)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// The index keeps its rows of jobs still in the store, and gains the new final ones.
	seen := make(map[string]indexedJob, len(idx.Jobs))
	for id, r := range idx.Jobs {
		if present[id] {
			seen[id] = r
		}
	}
	for i, r := range out {
		if final[i] {
			seen[ids[i]] = indexed(r.Listed)
		}
	}
	updateIndex(ctx, st, idx, seen, idx.Tombstones)
	return out, nil
}

// Row is one job as Rows reads it.
type Row struct {
	Listed
	// Err is why a job has no handle (a store not-found error, or a CleanedUpError).
	Err error
}
