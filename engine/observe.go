package engine

import (
	"context"
	"errors"
	"io"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/engine/listindex"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/jobview"
	"github.com/kinetic-run/kinetic/store"
)

// Status returns the job's state and, when FAILED, the reason.
func (j *Job) Status(ctx context.Context) (job.State, string, error) {
	return j.Backend.Status(ctx, j.Handle)
}

// view is the job seen from its store, its state from its backend.
func (j *Job) view() *jobview.Job {
	return &jobview.Job{Store: j.Store, ID: j.Handle.JobID, Live: j.Status}
}

// Wait blocks until the job is terminal and returns its final state and reason.
// onChange, if set, is called with every state first seen, the final one included.
func (j *Job) Wait(ctx context.Context, onChange func(job.State)) (job.State, string, error) {
	return j.view().Wait(ctx, onChange)
}

// Logs writes the job's logs to w. With follow, it keeps writing new output until the
// job is terminal.
func (j *Job) Logs(ctx context.Context, w io.Writer, follow bool) error {
	if ls, ok := j.Backend.(backend.Observer); ok {
		// At the source while the pod is there; the store's copy once it is gone.
		err := ls.StreamLogs(ctx, j.Handle, follow, 0, w)
		if !errors.Is(err, backend.ErrNoLogs) {
			return err
		}
	}
	if !follow {
		return j.logsChecked(ctx, w)
	}
	return j.cleanedUp(ctx, "logs", j.view().Logs(ctx, w, follow))
}

// LogsUntil is Logs with follow for a caller that waits for the job itself (Wait,
// Result): the store's copy is followed without a status poll of its own and ends when
// the caller closes ended, after it saw the job terminal (jobview.Job.LogsUntil). Logs
// at the source (a running pod) end with their stream, as with Logs.
func (j *Job) LogsUntil(ctx context.Context, w io.Writer, ended <-chan struct{}) error {
	if ls, ok := j.Backend.(backend.Observer); ok {
		err := ls.StreamLogs(ctx, j.Handle, true, 0, w)
		if !errors.Is(err, backend.ErrNoLogs) {
			return err
		}
	}
	return j.cleanedUp(ctx, "logs", j.view().LogsUntil(ctx, w, ended))
}

// Tail returns the last n lines of the job's logs.
func (j *Job) Tail(ctx context.Context, n int) (string, error) {
	s, err := j.view().Tail(ctx, n)
	if err := j.cleanedUp(ctx, "logs", err); err != nil {
		return "", err
	}
	return s, nil
}

// Result is how a job ended, with its value.
type Result = jobview.Result

// ErrNoResult means the job ended without an envelope (killed, cancelled, lost).
var ErrNoResult = jobview.ErrNoResult

// Result waits for the job and reads its envelope; with valueDir, result.pkl is copied
// to a file there. It returns ErrNoResult (wrapped, with the reason and the log tail)
// when the job failed before it could report.
func (j *Job) Result(ctx context.Context, valueTo jobview.ValueTo) (*Result, error) {
	res, err := j.view().Result(ctx, valueTo)
	if err != nil && res == nil {
		return nil, j.cleanedUp(ctx, "result", err)
	}
	return res, err
}

// ResultOf is Result for a job already known to be in the terminal state given (the
// caller waited for it), so it is not looked up again.
func (j *Job) ResultOf(ctx context.Context, state job.State, reason string, valueTo jobview.ValueTo) (*Result, error) {
	res, err := j.view().ResultOf(ctx, state, reason, valueTo)
	if err != nil && res == nil {
		return nil, j.cleanedUp(ctx, "result", err)
	}
	return res, err
}

// Cancel stops the job.
func (j *Job) Cancel(ctx context.Context) error { return j.Backend.Cancel(ctx, j.Handle) }

// Cleanup removes the backend's resources (backendRes) and the job's store objects
// (storeObjs), its tombstone included (a cleanup asked for by name leaves nothing).
// Outputs under KINETIC_OUTPUT_DIR are never removed.
func (j *Job) Cleanup(ctx context.Context, backendRes, storeObjs bool) error {
	if backendRes || storeObjs {
		// Store objects without a stopped job would strand a running process.
		if err := j.Backend.Cleanup(ctx, j.Handle); err != nil {
			return err
		}
	}
	if storeObjs {
		if err := j.view().Delete(ctx); err != nil {
			return err
		}
		return j.Store.Delete(ctx, store.TombstoneKey(j.Handle.JobID))
	}
	return nil
}

// Listed is one row of List.
type Listed struct {
	Handle *job.Handle `json:"handle"`
	State  job.State   `json:"status"`
	Reason string      `json:"reason,omitempty"`
	// FinishedAt is when a final job ended (its status.json), zero when not recorded.
	FinishedAt time.Time `json:"-"`
	// stamp is its status.json when the row was read, for the listing index.
	stamp *listindex.Stamp
}

// ListError is the State of a listed job that could not be read (a damaged handle.json
// or status.json, an unreachable backend): the row carries the job ID and the error in
// Reason. It is a listing marker, never a job's status.
const ListError job.State = "ERROR"

// List returns the jobs in the configured store (or storeURL), newest first.
func (e *Engine) List(ctx context.Context, storeURL string) ([]Listed, error) {
	rows, _, err := e.listing(ctx, e.cfg, storeURL, true, false)
	return rows, err
}

// ListIn is List with per-call configuration (list_jobs(project=, zone=, cluster=,
// namespace=, store=)): argument > KINETIC_* > profile > default, as for a submission, so
// a cluster backend lists the cluster and namespace they name.
func (e *Engine) ListIn(ctx context.Context, args map[config.Key]string) ([]Listed, error) {
	cfg, err := e.resolve(args)
	if err != nil {
		return nil, err
	}
	rows, _, err := e.listing(ctx, cfg, cfg.Get(config.Store), true, false)
	return rows, err
}

// StoreIn is the store URL the configuration resolves to with args on top (the profile
// of a cluster args name included: config.File.ProfileFor).
func (e *Engine) StoreIn(args map[config.Key]string) (string, error) {
	cfg, err := e.resolve(args)
	if err != nil {
		return "", err
	}
	return cfg.Get(config.Store), nil
}

// Listing returns the jobs and the tombstones of collected jobs in the configured store
// (or storeURL), each newest first: what `kinetic jobs list` shows, with one read of the
// listing index for both.
func (e *Engine) Listing(ctx context.Context, storeURL string) ([]Listed, []*job.Tombstone, error) {
	return e.listing(ctx, e.cfg, storeURL, true, true)
}

// listing lists jobs and/or tombstones through the listing index (package listindex): rows
// of final jobs and tombstones come from it, everything else from the store, and the
// index is rewritten when the listing found something it lacked or it holds rows of
// jobs that are gone. A part not listed is carried over unchanged.
func (e *Engine) listing(ctx context.Context, cfg *config.Resolved, storeURL string, jobs, tombs bool) ([]Listed, []*job.Tombstone, error) {
	if storeURL == "" {
		storeURL = cfg.Get(config.Store)
	}
	st, err := e.Store(ctx, storeURL)
	if errors.Is(err, store.ErrNoStore) {
		return nil, nil, nil // a store never written to holds no jobs
	}
	if err != nil {
		return nil, nil, err
	}
	idx := listindex.Read(ctx, st)
	seenJobs, seenTombs, sizes := idx.Jobs, idx.Tombstones, idx.TombstoneSizes
	var rows []Listed
	if jobs {
		if rows, seenJobs, err = e.listJobs(ctx, cfg, st, storeURL, idx); err != nil {
			return nil, nil, err
		}
	}
	var ts []*job.Tombstone
	if tombs {
		var damaged []Listed
		if ts, seenTombs, sizes, damaged, err = listTombstones(ctx, st, idx); err != nil {
			return nil, nil, err
		}
		if jobs && len(damaged) > 0 {
			// A tombstone that cannot be read is a job's row that names it, not a job
			// that silently was never there.
			rows = append(rows, damaged...)
			sort.Slice(rows, func(a, b int) bool { return rows[a].Handle.JobID > rows[b].Handle.JobID })
		}
	}
	listindex.Update(ctx, st, idx, seenJobs, seenTombs, sizes)
	return rows, ts, nil
}

// listJobs lists the jobs, a final one from the index when it is there; it returns the
// rows and the final ones to index.
func (e *Engine) listJobs(ctx context.Context, cfg *config.Resolved, st *store.Store, storeURL string, idx *listindex.Index) ([]Listed, map[string]listindex.Row, error) {
	idx.Look(ctx, st)
	ids, err := e.listIDs(ctx, cfg, st)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Listed, len(ids))
	final := make([]bool, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, id := range ids {
		if r, ok := row(st, idx, id); ok {
			out[i], final[i] = r, true
			continue
		}
		g.Go(func() error {
			j, err := e.Attach(gctx, id, storeURL)
			if errors.Is(err, ErrNotFound) {
				// No handle.json: cleaned up between the listing and now, being submitted
				// right now, or left by a submitter that stopped half-way.
				if created, ok := job.CreatedAt(id); ok && time.Since(created) > incompleteGrace {
					out[i] = Listed{Handle: &job.Handle{JobID: id}, State: ListError, Reason: jobview.IncompleteReason(id)}
				}
				return nil
			}
			if err != nil {
				out[i] = Listed{Handle: &job.Handle{JobID: id}, State: ListError, Reason: err.Error()}
				return nil
			}
			out[i], final[i], err = readRow(gctx, st, idx, j)
			if err != nil {
				out[i] = Listed{Handle: j.Handle, State: ListError, Reason: err.Error()}
			}
			return nil
		})
	}
	g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var rows []Listed
	index := map[string]listindex.Row{}
	for i, l := range out {
		if l.Handle == nil {
			continue
		}
		rows = append(rows, l)
		if final[i] {
			index[l.Handle.JobID] = indexed(l)
		}
	}
	sort.Slice(rows, func(a, b int) bool { return rows[a].Handle.JobID > rows[b].Handle.JobID })
	return rows, index, nil
}

// listIDs lists the jobs of the configured backend when it can list by itself (the
// Kubernetes backends, by label: the API reference's list_jobs), else the jobs in the store.
func (e *Engine) listIDs(ctx context.Context, cfg *config.Resolved, st *store.Store) ([]string, error) {
	name := cfg.Get(config.Backend)
	if name != "" && !backend.SharesFiles(name) {
		where := &job.Handle{Backend: name, Namespace: cfg.Get(config.Namespace), Project: cfg.Get(config.Project),
			Zone: cfg.Get(config.Zone), ClusterName: cfg.Get(config.Cluster), KubeContext: cfg.Get(config.KubeContext)}
		be, err := e.backendFor(where, st)
		if err != nil {
			return nil, err
		}
		if l, ok := be.(backend.Observer); ok {
			hs, err := l.List(ctx)
			if err != nil {
				return nil, err
			}
			ids := make([]string, 0, len(hs))
			for _, h := range hs {
				ids = append(ids, h.JobID)
			}
			return ids, nil
		}
	}
	return st.ListJobIDs(ctx)
}

// incompleteGrace is how old a job prefix without handle.json must be before it counts
// as a submission that stopped half-way (handle.json is written last, within seconds).
const incompleteGrace = time.Minute

// RemoveUnreadable deletes the store objects of job id when the job cannot be attached:
// a damaged handle.json, or a submission that stopped before writing it. No backend is
// touched: without a handle nothing says where the job ran. It reports whether there
// was anything to remove.
func (e *Engine) RemoveUnreadable(ctx context.Context, id, storeURL string) (bool, error) {
	if !job.ValidName(id) {
		return false, nil
	}
	if storeURL == "" {
		storeURL = e.cfg.Get(config.Store)
	}
	st, err := e.Store(ctx, storeURL)
	if err != nil {
		return false, err
	}
	return jobview.RemoveUnreadable(ctx, st, id)
}
