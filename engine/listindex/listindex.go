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
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

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
	// TombstoneSizes are the tombstones' sizes as the listing of tombstones/ gave them
	// when they were read: one whose size has changed since (damaged) is read again.
	TombstoneSizes map[string]int64 `json:"tombstone_sizes,omitempty"`

	// listed are the stamps of a bucket store's status.json objects by job ID, as Look
	// listed them (nil when the listing failed: no row is then current), once looked is
	// closed (nil: Look was not called).
	listed map[string]Stamp
	looked chan struct{}
}

// Row is one final job as the index keeps it.
type Row struct {
	Handle     *job.Handle `json:"handle"`
	State      job.State   `json:"state"`
	Reason     string      `json:"reason,omitempty"`
	FinishedAt time.Time   `json:"finished_at,omitzero"`
	// Status is the job's status.json as it was when the row was read: a row whose
	// status.json has changed since (damaged by hand or by a disk, rewritten, deleted) is
	// read again, so that damage is listed as it is found by `jobs status`. In a file
	// store a stat per job says so (microseconds on a local disk); in a bucket one
	// listing of the status.json objects does (Look), not a request per job.
	Status *Stamp `json:"status_stamp,omitempty"`
}

// Stamp is what a stat or a listing says of one status.json: its size (-1: absent),
// modification time and, in a bucket, its MD5.
type Stamp struct {
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ns,omitempty"`
	MD5     string `json:"md5,omitempty"`
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
	idx := &Index{Version: Version, Jobs: map[string]Row{}, Tombstones: map[string]*job.Tombstone{}, TombstoneSizes: map[string]int64{}}
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
	if got.TombstoneSizes != nil {
		idx.TombstoneSizes = got.TombstoneSizes
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

// Tombstone returns the indexed tombstone of job id if the index holds one read when
// the tombstone had the size the listing now gives.
func (idx *Index) Tombstone(id string, size int64) (*job.Tombstone, bool) {
	t, ok := idx.Tombstones[id]
	if !ok || t == nil || t.JobID != id {
		return nil, false
	}
	if s, ok := idx.TombstoneSizes[id]; !ok || s != size {
		return nil, false
	}
	return t, true
}

// Update merges a listing into the index and writes it when anything changed. jobs are
// the final rows of this listing (cached or newly read), tombs the tombstones listed
// and sizes their sizes; rows of anything else are dropped.
func Update(ctx context.Context, st *store.Store, old *Index, jobs map[string]Row, tombs map[string]*job.Tombstone, sizes map[string]int64) {
	changed := len(jobs) != len(old.Jobs) || len(tombs) != len(old.Tombstones)
	if !changed {
		for id, r := range jobs {
			if o, ok := old.Jobs[id]; !ok || !sameStamp(o.Status, r.Status) {
				changed = true
				break
			}
		}
	}
	if !changed {
		for id := range tombs {
			if _, ok := old.Tombstones[id]; !ok || old.TombstoneSizes[id] != sizes[id] {
				changed = true
				break
			}
		}
	}
	if !changed {
		return
	}
	write(ctx, st, &Index{Version: Version, Jobs: jobs, Tombstones: tombs, TombstoneSizes: sizes})
}

func sameStamp(a, b *Stamp) bool { return a == b || (a != nil && b != nil && *a == *b) }

// Look lists the status.json objects of every job in a store that is not a file store,
// once per listing, for Current and StatusStamp to compare with: one listing (on GCS a
// request per 1,000 jobs, store.ListNamed) instead of a request per job. It lists in the
// background, beside the listing of jobs/ the caller makes next; the first Current or
// StatusStamp waits for it. Without it, or when it fails, no row of such a store is
// current: the jobs are read again.
func (idx *Index) Look(ctx context.Context, st *store.Store) {
	if st.LocalDir() != "" {
		return
	}
	idx.looked = make(chan struct{})
	go func() {
		defer close(idx.looked)
		objs, err := st.ListNamed(ctx, store.JobsPrefix, store.StatusName)
		if err != nil {
			slog.Debug("status objects not listed; reading every job", "err", err)
			return
		}
		listed := make(map[string]Stamp, len(objs))
		for _, o := range objs {
			id := strings.TrimSuffix(strings.TrimPrefix(o.Key, store.JobsPrefix), "/"+store.StatusName)
			listed[id] = Stamp{Size: o.Size, ModTime: o.ModTime.UnixNano(), MD5: hex.EncodeToString(o.MD5)}
		}
		idx.listed = listed
	}()
}

// Current says whether row r of job id still stands for st: its status.json is as it was
// when the row was read.
func (idx *Index) Current(st *store.Store, id string, r Row) bool {
	s := idx.StatusStamp(st, id)
	return r.Status != nil && s != nil && *r.Status == *s
}

// StatusStamp is the stamp of job id's status.json in st: from a stat in a file store,
// else from Look's listing (nil without one). Taken before the row is read: a change in
// between is read again.
func (idx *Index) StatusStamp(st *store.Store, id string) *Stamp {
	dir := st.LocalDir()
	if dir == "" {
		if idx.looked == nil {
			return nil
		}
		<-idx.looked
		if idx.listed == nil {
			return nil
		}
		if s, ok := idx.listed[id]; ok {
			return &s
		}
		return &Stamp{Size: -1}
	}
	fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(store.StatusKey(id))))
	if err != nil {
		// Absent, or not to be looked at: a row taken then is read again once it is
		// there (a stamp with -2 matches no stat).
		if errors.Is(err, fs.ErrNotExist) {
			return &Stamp{Size: -1}
		}
		return &Stamp{Size: -2}
	}
	return &Stamp{Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}
}

// Tombstones lists tombstones/ in st, each taken from idx when it holds it at the size
// listed (a tombstone never changes; one that did is damaged) and otherwise through
// read. It returns them newest job first, the ones to index with their sizes, and the
// errors of the damaged ones (job.ErrDamaged) by job ID; a tombstone read fails for any
// other reason stands for a job already gone and is left out.
func Tombstones(ctx context.Context, st *store.Store, idx *Index, read func(context.Context, string) (*job.Tombstone, error)) (ts []*job.Tombstone, index map[string]*job.Tombstone, sizes map[string]int64, damaged map[string]error, err error) {
	objs, err := st.List(ctx, store.TombstonesPrefix)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ids := make([]string, len(objs))
	out := make([]*job.Tombstone, len(objs))
	bad := make([]error, len(objs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, o := range objs {
		ids[i] = strings.TrimSuffix(strings.TrimPrefix(o.Key, store.TombstonesPrefix), ".json")
		if !job.ValidName(ids[i]) {
			continue
		}
		if t, ok := idx.Tombstone(ids[i], o.Size); ok {
			out[i] = t
			continue
		}
		g.Go(func() error {
			t, err := read(gctx, ids[i])
			if err == nil {
				out[i] = t
			} else if errors.Is(err, job.ErrDamaged) {
				bad[i] = err
			}
			return nil
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, nil, err
	}
	index, sizes, damaged = map[string]*job.Tombstone{}, map[string]int64{}, map[string]error{}
	for i, t := range out {
		if t != nil {
			ts = append(ts, t)
			index[t.JobID], sizes[t.JobID] = t, objs[i].Size
		}
		if bad[i] != nil {
			damaged[ids[i]] = bad[i]
		}
	}
	sort.Slice(ts, func(a, b int) bool { return ts[a].JobID > ts[b].JobID })
	return ts, index, sizes, damaged, nil
}
