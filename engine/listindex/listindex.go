// Package listindex is the listing index (store.ListIndexKey): what listings read about
// jobs that can no longer change, the handle, final state, reason and end of every final
// job, and every tombstone. A listing of 10,000 final jobs then reads one object instead
// of 20,000.
//
// It is a cache, never the truth. A listing still lists jobs/ (and tombstones/), takes a
// row from the index only for a job listed there, reads every other job from its own
// objects, and drops rows of jobs that are gone. Only final rows are cached, and a final
// job's handle, state and end never change (its objects may only be deleted), so an index
// that is stale, lost, damaged, or written by two listers at once (the last write wins;
// each holds only true rows) costs reads, never a wrong row. The index is one object,
// written whole by one Put: a crash while writing it leaves the old one or the new one.
package listindex

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// Version changes when the index's shape does; an index of another version is ignored
// (and rewritten by the next listing that finds something to add).
const Version = 1

// Index is the listing index.
type Index struct {
	Version    int                       `json:"version"`
	Jobs       map[string]Row            `json:"jobs"`
	Tombstones map[string]*job.Tombstone `json:"tombstones"`
}

// Row is one final job as the index keeps it.
type Row struct {
	Handle     *job.Handle `json:"handle"`
	State      job.State   `json:"state"`
	Reason     string      `json:"reason,omitempty"`
	FinishedAt time.Time   `json:"finished_at,omitzero"`
}

// Row returns the row of job id, if the index holds a sound one.
func (idx *Index) Row(id string) (Row, bool) {
	r, ok := idx.Jobs[id]
	if !ok || r.Handle == nil || r.Handle.JobID != id {
		return Row{}, false
	}
	return r, true
}

// Read returns the store's listing index, or an empty one when there is none or it
// cannot be read or decoded (it is only a cache).
func Read(ctx context.Context, st *store.Store) *Index {
	idx := &Index{Version: Version, Jobs: map[string]Row{}, Tombstones: map[string]*job.Tombstone{}}
	raw, err := st.Get(ctx, store.ListIndexKey)
	if err != nil {
		if !store.IsNotFound(err) {
			slog.Debug("listing index unreadable; listing without it", "err", err)
		}
		return idx
	}
	var got Index
	if err := json.Unmarshal(raw, &got); err != nil || got.Version != Version {
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

// write stores idx. A failure (a read-only store, a full disk) is not the listing's: the
// next listing reads the jobs themselves again.
func write(ctx context.Context, st *store.Store, idx *Index) {
	b, err := json.Marshal(idx)
	if err == nil {
		err = st.Put(ctx, store.ListIndexKey, b)
	}
	if err != nil {
		slog.Debug("listing index not written", "err", err)
	}
}

// Update merges a listing into the index and writes it when anything changed. jobs are
// the final rows of this listing (cached or newly read), tombs the tombstones listed;
// rows of anything else are dropped.
func Update(ctx context.Context, st *store.Store, old *Index, jobs map[string]Row, tombs map[string]*job.Tombstone) {
	changed := len(jobs) != len(old.Jobs) || len(tombs) != len(old.Tombstones)
	if !changed {
		for id := range jobs {
			if _, ok := old.Jobs[id]; !ok {
				changed = true
				break
			}
		}
	}
	if !changed {
		for id := range tombs {
			if _, ok := old.Tombstones[id]; !ok {
				changed = true
				break
			}
		}
	}
	if !changed {
		return
	}
	write(ctx, st, &Index{Version: Version, Jobs: jobs, Tombstones: tombs})
}
