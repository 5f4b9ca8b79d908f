package batch

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/kinetic-run/kinetic/batch/driver"
	"github.com/kinetic-run/kinetic/batch/layout"
	"github.com/kinetic-run/kinetic/engine"
	"github.com/kinetic-run/kinetic/job"
	"github.com/kinetic-run/kinetic/store"
)

// A damaged batch (its manifest or template cannot be read, or its manifest is gone)
// is still cleaned up: its jobs are found from what is left of it — the manifest if it
// can be read, the children's entries, the derived children's IDs and, when the manifest
// cannot be read, the handles of the jobs made since the batch that name it.

// cleanupDamaged is Cleanup of damaged batch gid.
func cleanupDamaged(ctx context.Context, e Engine, gid, storeURL string, backendRes, storeObjs bool) error {
	st, storeURL, err := openStore(ctx, e, storeURL)
	if err != nil {
		return err
	}
	ids, unit, err := damagedJobs(ctx, st, gid)
	if err != nil {
		return err
	}
	var (
		mu       sync.Mutex
		attached *job.Handle // a child's own handle, should the template not say
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, id := range ids {
		g.Go(func() error {
			j, err := e.Attach(gctx, id, storeURL)
			var gone *engine.CleanedUpError
			switch {
			case err == nil:
				mu.Lock()
				if attached == nil {
					attached = j.Handle
				}
				mu.Unlock()
				return j.Cleanup(gctx, backendRes, storeObjs)
			case errors.As(err, &gone) || errors.Is(err, engine.ErrNotFound):
				if storeObjs {
					return e.RemoveTombstone(gctx, id, storeURL)
				}
				return nil
			case errors.Is(err, job.ErrDamaged):
				// Unreadable itself (or made from the damaged template): nothing says
				// where it ran, so only its objects can go.
				if storeObjs {
					return st.DeleteJob(gctx, id)
				}
				return nil
			default:
				return err
			}
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if unit == nil || (unit.Namespace == "" && attached != nil) {
		unit = attached
	}
	if backendRes && unit != nil {
		be, err := e.BackendFor(&job.Handle{Backend: unit.Backend, Namespace: unit.Namespace}, st)
		if err != nil {
			return err
		}
		if d, ok := be.(driver.Driver); ok {
			if err := d.CleanupGroup(ctx, gid); err != nil {
				return err
			}
		}
	}
	if storeObjs {
		return st.DeletePrefix(ctx, layout.Prefix(gid))
	}
	return nil
}

// damagedJobs returns the jobs of damaged batch gid found in what is left of it, and a
// handle that says which backend ran it: its template's, else one with the backend its
// manifest names (nil when neither can be read).
func damagedJobs(ctx context.Context, st *store.Store, gid string) ([]string, *job.Handle, error) {
	seen := map[string]bool{}
	var ids []string
	add := func(c layout.Child) {
		for _, id := range append([]string{c.JobID}, c.Attempts...) {
			if id != "" && job.ValidName(id) && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	var unit *job.Handle
	m, merr := layout.ReadManifest(ctx, st, gid)
	if merr == nil {
		for _, c := range m.Children {
			add(c)
		}
		unit = &job.Handle{Backend: m.Backend}
	}
	if t, err := layout.ReadTemplate(ctx, st, gid); err == nil {
		unit = t.Handle
	}
	entries, err := st.List(ctx, layout.ChildrenPrefix(gid))
	if err != nil {
		return nil, nil, err
	}
	for _, o := range entries {
		raw, err := st.Get(ctx, o.Key)
		var c layout.Child
		if err == nil && json.Unmarshal(raw, &c) == nil {
			add(c)
		}
	}
	listed, err := st.ListDirs(ctx, "jobs/")
	if err != nil {
		return nil, nil, err
	}
	since, _ := job.CreatedAt(gid)
	var others []string
	for _, id := range listed {
		if g, _, ok := job.ParseChildID(id); ok && g == gid {
			add(layout.Child{JobID: id})
		} else if created, ok := job.CreatedAt(id); merr != nil && ok && !created.Before(since) && !seen[id] {
			others = append(others, id)
		}
	}
	// Without a manifest, a job of the batch submitted one by one (a retry, a child of
	// a batch that is not derived) whose entry is gone too is known by its handle.
	named := make([]bool, len(others))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for k, id := range others {
		g.Go(func() error {
			raw, err := st.Get(gctx, store.HandleKey(id))
			if err != nil {
				return nil
			}
			h, err := job.DecodeHandle(raw)
			named[k] = err == nil && h.GroupID == gid
			return nil
		})
	}
	g.Wait()
	for k, id := range others {
		if named[k] {
			add(layout.Child{JobID: id})
		}
	}
	return ids, unit, ctx.Err()
}
